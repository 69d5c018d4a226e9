#include "host/store/graph_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/planner.hpp"
#include "host/store/benefit_audit_store.hpp"
#include "host/store/verified_files.hpp"
#include "tests/support/engine/seed_benefit_facts.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::store {
namespace {

namespace planning = engine::planning;
namespace fs = std::filesystem;

std::string digest_of(const std::string& text) { return core::sha256_hex(text); }

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string file_sha256(const fs::path& path) { return core::sha256_hex(file_bytes(path)); }

class GraphStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/ctx-graph-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }

  // The seed's networkx graph: node id kind:name, label name, type kind, tags ["python"].
  fs::path seed_graph(const std::vector<std::string>& ids,
                      const std::string& name = "graph.sqlite3") {
    std::vector<GraphNode> nodes;
    for (const auto& id : ids) {
      GraphNode node;
      node.id = id;
      node.type = id.substr(0, id.find(':'));
      node.label = id.substr(id.find(':') + 1);
      node.tags = {"python"};
      nodes.push_back(node);
    }
    return pinned(nodes, {}, name);
  }

  fs::path pinned(const std::vector<GraphNode>& nodes, const std::vector<GraphEdge>& edges,
                  const std::string& name = "graph.sqlite3") {
    const fs::path path = dir_ / name;
    build_graph_store(path, nodes, edges);
    ::chmod(path.c_str(), 0444);
    return path;
  }

  fs::path dir_;
};

const std::vector<std::string> kSix = {"agent:reviewer",  "harness:python-runner",
                                       "mcp-server:docs", "skill:lint",
                                       "skill:test",      "skill:types"};

TEST_F(GraphStoreTest, RetrievesSeedGraphScoredAndRanked) {
  const auto path = seed_graph(kSix);
  const auto store = GraphStore::open(path, file_sha256(path));
  EXPECT_EQ(store->node_count(), 6);
  const auto rows = store->retrieve({"python"}, 50);
  ASSERT_EQ(rows.size(), 6u);
  // "python" is a word of python-runner's label: 3 x idf + the tag's idf (BM25, tf 1, every node
  // one tag); every other node scores the tag's idf alone, i.e. round(1 / 4, 4) = 0.25.
  EXPECT_EQ(rows[0].kind, engine::CapabilityKind::kHarness);
  EXPECT_EQ(rows[0].name, "python-runner");
  EXPECT_EQ(rows[0].normalized_score_ppm, 1'000'000);
  std::vector<std::string> rest;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    rest.push_back(std::string(engine::to_string(rows[i].kind)) + ":" + rows[i].name);
    EXPECT_EQ(rows[i].normalized_score_ppm, 250'000);
    EXPECT_EQ(rows[i].tags, std::vector<std::string>{"python"});
  }
  EXPECT_EQ(rest, (std::vector<std::string>{"agent:reviewer", "mcp-server:docs", "skill:lint",
                                            "skill:test", "skill:types"}));
  EXPECT_TRUE(store->retrieve({}, 50).empty());
  EXPECT_TRUE(store->retrieve({"rust"}, 50).empty());
  EXPECT_EQ(store->retrieve({"python"}, 2).size(), 2u);
}

TEST_F(GraphStoreTest, RareTagsOutweighCommonOnesAndExplicitNamesWin) {
  std::vector<GraphNode> nodes;
  for (int i = 0; i < 8; ++i) {
    GraphNode n;
    n.id = "skill:generic-" + std::to_string(i);
    n.type = "skill";
    n.tags = {"python"};
    nodes.push_back(n);
  }
  GraphNode rare;
  rare.id = "skill:web";
  rare.type = "skill";
  rare.tags = {"fastapi", "python"};
  nodes.push_back(rare);
  GraphNode named;
  named.id = "agent:code-reviewer";
  named.type = "agent";
  named.tags = {"review"};
  nodes.push_back(named);
  const auto path = pinned(nodes, {});
  const auto store = GraphStore::open(path, file_sha256(path));
  const auto rows = store->retrieve({"fastapi", "python"}, 50);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].name, "web");
  const auto named_rows = store->retrieve({"code-reviewer"}, 50);
  ASSERT_EQ(named_rows.size(), 1u);
  EXPECT_EQ(named_rows[0].kind, engine::CapabilityKind::kAgent);
  EXPECT_EQ(named_rows[0].normalized_score_ppm, 1'000'000);
}

TEST_F(GraphStoreTest, OneIncidentalTagOfSeveralSignalsIsNoMatch) {
  // Work with several signals: a node matching one of them only through a tag (a description
  // word) is not retrieved; one matching two signals, or one in its label, is.
  GraphNode incidental{"skill:weather-report", "skill", std::nullopt, std::nullopt, {"good"}};
  GraphNode two{"skill:loan-calc", "skill", std::nullopt, std::nullopt, {"excel", "formulas"}};
  GraphNode named{"skill:excel-charts", "skill", std::nullopt, std::nullopt, {"charts"}};
  const auto path = pinned({incidental, two, named}, {});
  const auto store = GraphStore::open(path, file_sha256(path));
  std::vector<std::string> names;
  for (const auto& row : store->retrieve({"excel", "formulas", "good"}, 50)) {
    names.push_back(row.name);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"excel-charts", "loan-calc"}));
  // A single signal still finds its tag.
  EXPECT_EQ(store->retrieve({"good"}, 50).size(), 1u);
}

TEST_F(GraphStoreTest, ShorterDescriptionsRankFirstForTheSameTagMatch) {
  GraphNode short_one{"skill:a", "skill", std::nullopt, std::nullopt, {"pdf", "forms"}};
  GraphNode long_one{"skill:b",
                     "skill",
                     std::nullopt,
                     std::nullopt,
                     {"pdf", "forms", "one", "two", "three", "four", "five", "six"}};
  const auto path = pinned({long_one, short_one}, {});
  const auto store = GraphStore::open(path, file_sha256(path));
  const auto rows = store->retrieve({"forms", "pdf"}, 50);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "a");
  EXPECT_LT(rows[1].normalized_score_ppm, 1'000'000);
}

TEST_F(GraphStoreTest, SubstringOnlyMatchesAreFoundThroughTheTrigramIndex) {
  GraphNode fast{"skill:fastapi-tools", "skill", std::nullopt, std::nullopt, {"web"}};
  GraphNode exact{"skill:api", "skill", std::nullopt, std::nullopt, {"web"}};
  GraphNode other{"skill:rust-tools", "skill", std::nullopt, std::nullopt, {"web"}};
  const auto path = pinned({fast, exact, other}, {});
  const auto store = GraphStore::open(path, file_sha256(path));
  const auto rows = store->retrieve({"api"}, 50);
  ASSERT_EQ(rows.size(), 2u);
  // skill:api: label word (3 x idf) + exact single-name boost 2025; fastapi-tools: 0.5 x idf.
  EXPECT_EQ(rows[0].name, "api");
  EXPECT_EQ(rows[1].name, "fastapi-tools");
  EXPECT_LT(rows[1].normalized_score_ppm, 20'000);
  EXPECT_GT(rows[1].normalized_score_ppm, 0);
}

TEST_F(GraphStoreTest, NeverLoadAndUnknownKindsAreNotRetrieved) {
  GraphNode hidden;
  hidden.id = "skill:hidden";
  hidden.type = "skill";
  hidden.tags = {"python"};
  hidden.never_load = true;
  GraphNode concept_node;
  concept_node.id = "concept:python";
  concept_node.type = "concept";
  concept_node.tags = {"python"};
  GraphNode visible;
  visible.id = "skill:visible";
  visible.type = "skill";
  visible.tags = {"python"};
  const auto path =
      pinned({hidden, concept_node, visible}, {{"skill:visible", "concept:python", 1.0}});
  const auto store = GraphStore::open(path, file_sha256(path));
  const auto rows = store->retrieve({"python"}, 50);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "visible");
}

// Every row is typed at the store boundary: each kind comes back as its CapabilityKind, and ties
// still rank by the kind's spelling (agent < harness < mcp-server < skill), not enum order.
TEST_F(GraphStoreTest, RowsCarryTheirCapabilityKindAndTiesRankBySpelling) {
  const auto path = seed_graph({"skill:same", "mcp-server:same", "harness:same", "agent:same"});
  const auto store = GraphStore::open(path, file_sha256(path));
  const auto rows = store->retrieve({"python"}, 50);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].kind, engine::CapabilityKind::kAgent);
  EXPECT_EQ(rows[1].kind, engine::CapabilityKind::kHarness);
  EXPECT_EQ(rows[2].kind, engine::CapabilityKind::kMcpServer);
  EXPECT_EQ(rows[3].kind, engine::CapabilityKind::kSkill);
}

// The retrieval index holds capability-kind nodes only; an indexed node whose stored type is no
// capability kind (the node table was edited) makes the source unavailable instead of being
// skipped or guessed.
TEST_F(GraphStoreTest, AnIndexedNodeOfAnUnknownKindSpellingIsATypedError) {
  const fs::path path = dir_ / "graph.sqlite3";
  build_graph_store(path, {GraphNode{"skill:a", "skill", std::nullopt, std::nullopt, {"python"}},
                           GraphNode{"skill:b", "skill", std::nullopt, std::nullopt, {"python"}}});
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE nodes SET type = 'Skill' WHERE id = 'skill:b'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ::chmod(path.c_str(), 0444);
  const auto store = GraphStore::open(path, file_sha256(path));
  CTX_EXPECT_THROW(store->retrieve({"python"}, 50), planning::CandidateSourceUnavailable,
                   "indexed graph candidate retrieval failed");
}

TEST_F(GraphStoreTest, PinMismatchIsATypedError) {
  const auto path = seed_graph(kSix);
  CTX_EXPECT_THROW(GraphStore::open(path, digest_of("other")), planning::GraphArtifactPinMismatch,
                   "does not match its pin");
  // A tampered artifact under the original pin is refused the same way.
  const std::string pin = file_sha256(path);
  ::chmod(path.c_str(), 0644);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  ::chmod(path.c_str(), 0444);
  CTX_EXPECT_THROW(GraphStore::open(path, pin), planning::GraphArtifactPinMismatch, "pin");
  // Its code says never to retry with these bytes (a CandidateSourceUnavailable of its own is
  // kUnavailable: retry with a repaired or re-pinned artifact).
  try {
    GraphStore::open(path, pin);
    ADD_FAILURE() << "a tampered artifact opened";
  } catch (const planning::GraphArtifactPinMismatch& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  }
  EXPECT_EQ(planning::CandidateSourceUnavailable("x").code(), ErrorCode::kUnavailable);
  // The mismatch is a CandidateSourceUnavailable, so planning degrades instead of trusting it.
  CTX_EXPECT_THROW(GraphStore::open(path, pin), planning::CandidateSourceUnavailable,
                   "indexed graph candidate source is unavailable");
}

TEST_F(GraphStoreTest, StoresOfOnePinnedArtifactShareOneImage) {
  const auto path = seed_graph(kSix);
  const std::string pin = file_sha256(path);
  const auto first = GraphStore::open(path, pin);
  const auto second = GraphStore::open(path, pin);
  EXPECT_TRUE(second->shares_image_with(*first));
  EXPECT_EQ(second->retrieve({"lint"}, 3).front().name, "lint");
  const auto other_path = seed_graph({"skill:other"}, "other.sqlite3");
  const auto other = GraphStore::open(other_path, file_sha256(other_path));
  EXPECT_FALSE(other->shares_image_with(*first));
}

TEST_F(GraphStoreTest, AFileThisProcessHashedAndThatIsUnchangedIsNotReadAgain) {
  const auto path = seed_graph(kSix);
  const auto other_path = seed_graph({"skill:other"}, "other.sqlite3");
  const std::string other_pin = file_sha256(other_path);
  const auto other = GraphStore::open(other_path, other_pin);
  // The memory of hashed files says `path` holds other's bytes (as if it had been read and had
  // settled): an open under that pin reads nothing and serves the open image of those bytes.
  struct stat status {};
  ASSERT_EQ(::lstat(path.c_str(), &status), 0);
  struct timespec settled = realtime_now();
  settled.tv_sec += 5;
  remember_sha256(status, other_pin, settled);
  const auto trusted = GraphStore::open(path, other_pin);
  EXPECT_TRUE(trusted->shares_image_with(*other));
  EXPECT_EQ(trusted->retrieve({"other"}, 3).front().name, "other");
  // Once the file's status changes it is read again, and its real bytes fail the pin.
  ::chmod(path.c_str(), 0400);
  CTX_EXPECT_THROW(GraphStore::open(path, other_pin), planning::GraphArtifactPinMismatch, "pin");
}

TEST_F(GraphStoreTest, WritableSymlinkedOrSidecarArtifactsAreRefused) {
  const auto path = seed_graph(kSix);
  const std::string pin = file_sha256(path);
  ::chmod(path.c_str(), 0644);
  CTX_EXPECT_THROW(GraphStore::open(path, pin), planning::CandidateSourceUnavailable,
                   "unavailable");
  ::chmod(path.c_str(), 0444);
  const auto link = dir_ / "link.sqlite3";
  fs::create_symlink(path, link);
  CTX_EXPECT_THROW(GraphStore::open(link, pin), planning::CandidateSourceUnavailable,
                   "unavailable");
  std::ofstream(path.string() + "-wal") << "x";
  CTX_EXPECT_THROW(GraphStore::open(path, pin), planning::CandidateSourceUnavailable,
                   "unavailable");
  CTX_EXPECT_THROW(GraphStore::open(dir_ / "missing.sqlite3", pin),
                   planning::CandidateSourceUnavailable, "unavailable");
}

TEST_F(GraphStoreTest, OpensReadOnlyAndLeavesTheArtifactUntouched) {
  const auto path = seed_graph(kSix);
  const std::string before = file_bytes(path);
  {
    const auto store = GraphStore::open(path, core::sha256_hex(before));
    EXPECT_TRUE(store->read_only());
    for (int i = 0; i < 3; ++i) store->retrieve({"python"}, 50);
  }
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_FALSE(fs::exists(path.string() + "-wal"));
  EXPECT_FALSE(fs::exists(path.string() + "-journal"));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().rfind(".ctx-graph-snapshot-", 0), std::string::npos)
        << "private snapshot left behind";
  }
}

TEST_F(GraphStoreTest, CandidateLookupUsesTheTermIndex) {
  const auto path = seed_graph(kSix);
  const auto store = GraphStore::open(path, file_sha256(path));
  const auto plan = store->candidate_lookup_plan();
  ASSERT_FALSE(plan.empty());
  bool indexed = false;
  for (const auto& line : plan) {
    EXPECT_EQ(line.find("SCAN"), std::string::npos) << line;
    EXPECT_EQ(line.find("TEMP B-TREE"), std::string::npos) << line;  // read in rank order
    indexed = indexed || (line.find("SEARCH term_postings") != std::string::npos &&
                          line.find("PRIMARY KEY") != std::string::npos);
  }
  EXPECT_TRUE(indexed);
}

// `path`'s artifact as schema version 1 wrote it (no term_postings): pinned at `copy`.
fs::path as_version_1(const fs::path& path, const fs::path& copy) {
  fs::copy_file(path, copy);
  fs::permissions(copy, fs::perms::owner_read | fs::perms::owner_write);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(copy.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "DROP TABLE term_postings; PRAGMA user_version = 1; VACUUM", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ::chmod(copy.c_str(), 0444);
  return copy;
}

std::vector<std::string> names_of(const std::vector<planning::RetrievedNode>& rows) {
  std::vector<std::string> names;
  for (const auto& row : rows) names.push_back(row.name);
  return names;
}

// Each signal's lookup reads a bounded prefix of its ranked list (term_postings), and ranks as a
// read of every node holding a signal does (a version 1 artifact's node_terms): with terms held
// by hundreds of nodes, the named, the label-word and the two-signal nodes still come first.
TEST_F(GraphStoreTest, ABoundedLookupRanksAsAReadOfEveryMatchingNode) {
  std::vector<GraphNode> nodes;
  for (int i = 0; i < 600; ++i) {
    GraphNode node;
    node.id = "skill:filler-" + std::to_string(i);
    node.type = "skill";
    node.tags = {"python", "code", "tool" + std::to_string(i % 7)};
    if (i % 50 == 0) node.tags.push_back("testing");
    nodes.push_back(node);
  }
  const auto add = [&](const std::string& id, std::vector<std::string> tags) {
    GraphNode node;
    node.id = id;
    node.type = id.substr(0, id.find(':'));
    node.tags = std::move(tags);
    nodes.push_back(node);
  };
  add("skill:python-testing", {"python", "pytest"});
  add("agent:code-reviewer", {"code", "review", "quality"});
  add("skill:zz-late-pytest-helper", {"python", "testing", "fixtures"});
  add("mcp-server:docs", {"documentation"});
  const auto path = pinned(nodes, {});
  const auto old_path = as_version_1(path, dir_ / "v1.sqlite3");
  const auto bounded = GraphStore::open(path, file_sha256(path));
  const auto whole = GraphStore::open(old_path, file_sha256(old_path));
  const std::vector<std::vector<std::string>> works = {
      {"python"},
      {"python", "testing"},
      {"code", "review"},
      {"python", "code"},
      {"python-testing"},
      {"fixtures", "python", "code"},
      {"docs"},
      {"code", "python", "testing"},
      {"tool3", "python"},
  };
  for (const auto& work : works) {
    const auto top = bounded->retrieve(work, 5);
    EXPECT_EQ(names_of(top), names_of(whole->retrieve(work, 5))) << ::testing::PrintToString(work);
    ASSERT_FALSE(top.empty()) << ::testing::PrintToString(work);
  }
  EXPECT_EQ(bounded->retrieve({"python", "testing"}, 5).front().name, "python-testing");
  EXPECT_EQ(bounded->retrieve({"code", "review"}, 5).front().name, "code-reviewer");
  EXPECT_EQ(bounded->retrieve({"python-testing"}, 5).front().name, "python-testing");
  // A version 1 artifact is still read (whole lists), and says how it looks up.
  bool old_index = false;
  for (const auto& line : whole->candidate_lookup_plan()) {
    old_index = old_index || line.find("idx_node_terms_term") != std::string::npos;
  }
  EXPECT_TRUE(old_index);
}

TEST_F(GraphStoreTest, InconsistentMetadataMakesTheSourceUnavailable) {
  const fs::path path = dir_ / "graph.sqlite3";
  build_graph_store(path, {GraphNode{"skill:a", "skill", std::nullopt, std::nullopt, {"python"}}});
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE metadata SET value = '7' WHERE key = 'node_count'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ::chmod(path.c_str(), 0444);
  CTX_EXPECT_THROW(GraphStore::open(path, file_sha256(path)), planning::CandidateSourceUnavailable,
                   "indexed graph candidate source is unavailable");
}

TEST_F(GraphStoreTest, ArtifactsAreVersionedAndANewerSchemaIsNamed) {
  const fs::path path = dir_ / "graph.sqlite3";
  build_graph_store(path, {GraphNode{"skill:a", "skill", std::nullopt, std::nullopt, {"python"}}});
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 2);
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 3", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ::chmod(path.c_str(), 0444);
  CTX_EXPECT_THROW(GraphStore::open(path, file_sha256(path)), planning::CandidateSourceUnavailable,
                   "graph store has newer schema version 3 (this build reads up to 2)");
}

TEST_F(GraphStoreTest, BuildRejectsDuplicateNodesAndExistingFiles) {
  GraphNode a{"skill:a", "skill", std::nullopt, std::nullopt, {"python"}};
  CTX_EXPECT_THROW(build_graph_store(dir_ / "dup.sqlite3", {a, a}), InvalidArgument, "duplicated");
  build_graph_store(dir_ / "one.sqlite3", {a});
  CTX_EXPECT_THROW(build_graph_store(dir_ / "one.sqlite3", {a}), InvalidArgument, "exists");
  CTX_EXPECT_THROW(build_graph_store(dir_ / "edge.sqlite3", {a}, {{"skill:a", "skill:zz", 0}}),
                   InvalidArgument, "unknown node");
}

// ---- the seed's planning scenarios end to end: SQLite graph + SQLite audit ----

class SeedFacts final : public planning::BenefitFactsPort {
 public:
  std::string benefit_facts_snapshot_digest() const override {
    return digest_of("managed-benefit-facts");
  }
  std::optional<planning::BenefitCandidate> benefit_candidate(
      const planning::CapabilityCandidate& p, const planning::WorkObservation&) override {
    return ctx::testing::seed_benefit_candidate(p);
  }
};

planning::NetBenefitPolicy seed_policy() {
  planning::NetBenefitPolicyConfig c;
  c.calibration_digest = digest_of("calibration");
  c.minimum_relevance_ppm = 1;
  return planning::NetBenefitPolicy(c);
}

planning::WorkObservation python_work(std::int64_t limit) {
  planning::WorkObservation w;
  w.signals = {"python"};
  w.languages = {"python"};
  w.requested_limit = limit;
  return w;
}

TEST_F(GraphStoreTest, SeedPlansOverTheSqliteGraphAndAuditStore) {
  const auto path = seed_graph(kSix);
  const auto graph = GraphStore::open(path, file_sha256(path));
  const auto audit = SqliteBenefitAuditStore::open(dir_ / "audit" / "audit.sqlite3");
  SeedFacts facts;
  planning::CapabilityPlanner planner(
      {"ctx-managed-query-planner-v3", digest_of("managed-query-catalog"), 50}, seed_policy(),
      *graph, facts, nullptr, nullptr, *audit);
  const auto plan = planner.plan(python_work(5));
  EXPECT_EQ(plan.status(), engine::PlanStatus::kReady);
  ASSERT_EQ(plan.capabilities().size(), 5u);
  std::set<std::string> kinds;
  for (const auto& row : plan.capabilities()) {
    kinds.emplace(engine::to_string(row.presentation.kind));
    EXPECT_EQ(row.presentation.matching_signals, std::vector<std::string>{"python"});
    std::vector<std::string> reasons = {"graph-match", "language-match", "signal-match",
                                        "tag-match"};
    if (row.presentation.name == "python-runner") reasons.insert(reasons.begin() + 2, "name-match");
    EXPECT_EQ(row.presentation.reason_codes, reasons);
    EXPECT_GT(row.marginal_net_benefit_u, 0);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"agent", "harness", "mcp-server", "skill"}));
  const auto stored = audit->load(plan.benefit_audit()->result_digest);
  EXPECT_EQ(stored.selections().size(), 5u);

  const auto zero = planner.plan(python_work(0));
  EXPECT_EQ(zero.status(), engine::PlanStatus::kAbstained);
  EXPECT_EQ(zero.abstention_code(), engine::AbstentionCode::kLimitZero);
  EXPECT_TRUE(zero.capabilities().empty());
  EXPECT_EQ(audit->load(zero.benefit_audit()->result_digest).abstention_code(),
            engine::AbstentionCode::kLimitZero);

  // Same inputs, same decision: again on this planner (its remembered selection) and on a second
  // planner over a fresh open (computed afresh), byte for byte.
  EXPECT_EQ(planner.plan(python_work(5)).decision_digest(), plan.decision_digest());
  const auto graph2 = GraphStore::open(path, file_sha256(path));
  planning::CapabilityPlanner again(
      {"ctx-managed-query-planner-v3", digest_of("managed-query-catalog"), 50}, seed_policy(),
      *graph2, facts, nullptr, nullptr, *audit);
  EXPECT_EQ(again.plan(python_work(5)).decision_digest(), plan.decision_digest());
  EXPECT_EQ(again.planning_environment_digest(), planner.planning_environment_digest());
}

}  // namespace
}  // namespace ctx::store
