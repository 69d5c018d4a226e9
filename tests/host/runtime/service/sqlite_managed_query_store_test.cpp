// store::SqliteManagedQueryStore's own tests (what the port's contract suite,
// managed_query_store_contract_test.cpp, cannot say of every store): schema and pragmas, reopening,
// migrations, authenticated references and rows, and typed failures that leave the file
// byte-identical (tampered rows, foreign references, another installation key, conflicting
// registrations, capacity). Here, not in tests/host/store: its events come from the service seeds'
// setup, which needs the runtime.
#include "host/store/sqlite_managed_query_store.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "host/core/time.hpp"
#include "host/runtime/service/query_store.hpp"
#include "host/store/managed_query_file.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::read_database;
using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

struct Fixture {
  TempDir tmp;
  ServiceSetup setup = make_setup(tmp.path());
};

TEST(ManagedQueryStore, SchemaIsVersionedWithoutRowidAndPrivate) {
  Fixture f;
  EXPECT_EQ(sqlite_scalar(f.setup.store_path, "PRAGMA user_version"), "4");
  for (const char* table :
       {"managed_query_store_identity", "managed_queries", "managed_desired_sets", "managed_inputs",
        "managed_query_correlations"}) {
    EXPECT_THAT(
        sqlite_scalar(f.setup.store_path,
                      std::string("SELECT sql FROM sqlite_master WHERE name = '") + table + "'"),
        ::testing::HasSubstr("WITHOUT ROWID"))
        << table;
  }
  // The inputs' capacity count reads their keys' index, not every input's text.
  EXPECT_THAT(sqlite_scalar(f.setup.store_path,
                            "EXPLAIN QUERY PLAN SELECT count(*) FROM managed_inputs", 3),
              ::testing::HasSubstr("idx_managed_inputs_keys"));
  struct stat info {};
  ASSERT_EQ(::stat(f.setup.store_path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(f.setup.store_path.parent_path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0700u);
  // Reopening the same file under the same key works; the reference is stable.
  const auto record = f.setup.register_query(digest("stable"));
  auto again = store::open_managed_query_store(f.setup.store_path, store_key());
  EXPECT_EQ(again->load(record.query_ref()).logical_query_id(), digest("stable"));
  EXPECT_EQ(f.setup.register_query(digest("stable")).query_ref(), record.query_ref());
  EXPECT_TRUE(is_query_ref(record.query_ref()));
}

// The input authority's registrations: stored once (an identical put writes nothing), read back
// authenticated; a row altered in the file, or bound to another plan id, is corruption.
TEST(ManagedQueryStore, InputsAreStoredOnceAndAuthenticatedOnRead) {
  Fixture f;
  auto& store = *f.setup.store;
  const std::string plan = "plan-0123456789abcdef";
  const std::string input = R"({"schema":"ctx.managed-input-v1","x":1})";
  EXPECT_FALSE(store.find_input(plan).has_value());
  store.put_input(plan, input);
  const auto before = read_database(f.setup.store_path);
  store.put_input(plan, input);
  EXPECT_EQ(read_database(f.setup.store_path), before);
  EXPECT_EQ(store.find_input(plan), input);
  CTX_EXPECT_THROW(store.put_input(plan, input + " "), ManagedQueryStoreCorruption, "differs");
  CTX_EXPECT_THROW(store.put_input("not a token!", input), InvalidArgument, "opaque token");
  CTX_EXPECT_THROW(store.put_input(plan, std::string(64 * 1024 + 1, 'x')),
                   ManagedQueryStoreCapacityExceeded, "too large");
  // Another plan id's row moved under this one, then the bytes altered in place.
  store.put_input("plan-other", input);
  sqlite_scalar(f.setup.store_path, "DELETE FROM managed_inputs WHERE plan_id = '" + plan + "'");
  sqlite_scalar(f.setup.store_path,
                "UPDATE managed_inputs SET plan_id = '" + plan + "' WHERE plan_id = 'plan-other'");
  CTX_EXPECT_THROW(store.find_input(plan), ManagedQueryStoreCorruption, "authentication failed");
  store.put_input("plan-third", input);
  sqlite_scalar(f.setup.store_path,
                "UPDATE managed_inputs SET input_json = CAST(replace(CAST(input_json AS TEXT), "
                "'1', '2') AS BLOB) WHERE plan_id = 'plan-third'");
  CTX_EXPECT_THROW(store.find_input("plan-third"), ManagedQueryStoreCorruption,
                   "authentication failed");
}

// A store written by a build before managed_inputs (user_version 2) gains the table on open and
// keeps its rows; the pinned schema then holds.
TEST(ManagedQueryStore, AVersionTwoStoreMigratesOnOpenAndKeepsItsRows) {
  Fixture f;
  const auto record = f.setup.register_query(digest("kept"));
  sqlite_scalar(f.setup.store_path, "DROP TABLE managed_inputs");
  sqlite_scalar(f.setup.store_path, "DROP TABLE managed_query_correlations");
  sqlite_scalar(f.setup.store_path, "PRAGMA user_version = 2");
  auto reopened = store::open_managed_query_store(f.setup.store_path, store_key());
  EXPECT_EQ(sqlite_scalar(f.setup.store_path, "PRAGMA user_version"), "4");
  EXPECT_EQ(reopened->load(record.query_ref()).logical_query_id(), digest("kept"));
  reopened->put_input("plan-after-migration", "{}");
  EXPECT_EQ(reopened->find_input("plan-after-migration"), "{}");
  // Another version is not guessed at.
  sqlite_scalar(f.setup.store_path, "PRAGMA user_version = 7");
  CTX_EXPECT_THROW(store::open_managed_query_store(f.setup.store_path, store_key()),
                   ManagedQueryStoreCorruption, "version is unsupported");
}

// A store written before managed_query_correlations (user_version 3) gains the table on open,
// filled from its registrations: a registration made before the migration still holds its scope
// and plan against another logical id, and a text that is not a registration is left out.
TEST(ManagedQueryStore, AVersionThreeStoreMigratesAndItsRegistrationsStillHoldTheirPlan) {
  Fixture f;
  const auto owner = f.setup.register_query(digest("owner"));
  EXPECT_EQ(sqlite_scalar(f.setup.store_path,
                          "SELECT count(*) FROM managed_query_correlations WHERE "
                          "correlation_id = 'plan-initial'"),
            "1");
  sqlite_scalar(f.setup.store_path, "DROP TABLE managed_query_correlations");
  sqlite_scalar(f.setup.store_path, "DROP INDEX idx_managed_inputs_keys");
  sqlite_scalar(f.setup.store_path, "PRAGMA user_version = 3");
  // Rows whose text is not a registration (not JSON; JSON without a string correlation id; a
  // blob): the migration leaves them out and still completes.
  for (const auto& [name, text] :
       {std::pair{"junk-text", "'not json'"},
        std::pair{"junk-number", "'{\"decision_event\":{\"correlation_id\":7}}'"},
        std::pair{"junk-blob", "x'7b7d'"}}) {
    sqlite_scalar(f.setup.store_path,
                  std::string("INSERT INTO managed_queries(logical_query_id, query_ref, "
                              "registration_json, registration_bytes, row_hmac) VALUES ('") +
                      digest(name) + "', 'mqr_" + digest(name) + "', " + text + ", 1, 'x')");
  }
  auto reopened = store::open_managed_query_store(f.setup.store_path, store_key());
  EXPECT_EQ(sqlite_scalar(f.setup.store_path, "PRAGMA user_version"), "4");
  EXPECT_EQ(sqlite_scalar(f.setup.store_path,
                          "SELECT logical_query_id FROM managed_query_correlations WHERE "
                          "correlation_id = 'plan-initial'"),
            digest("owner"));
  EXPECT_EQ(sqlite_scalar(f.setup.store_path, "SELECT count(*) FROM managed_query_correlations"),
            "1");
  sqlite_scalar(f.setup.store_path, "DELETE FROM managed_queries WHERE row_hmac = 'x'");
  const auto other_decision =
      replace_event(f.setup.managed_input->decision_event(),
                    [](engine::EngineEvent::Fields& e) { e.event_id = "event-other"; });
  const auto before = read_database(f.setup.store_path);
  CTX_EXPECT_THROW(
      reopened->register_query(digest("intruder"), f.setup.managed_input->session_started(),
                               other_decision, f.setup.artifact->manifest_digest(),
                               f.setup.artifact->planning_environment_digest()),
      ManagedQueryStoreConflict, "scope and plan");
  EXPECT_EQ(read_database(f.setup.store_path), before);
  EXPECT_EQ(reopened->load(owner.query_ref()).logical_query_id(), digest("owner"));
}

// The same-plan check reads the registrations recorded under the plan id, not the whole table.
// With the lookup rows deleted in the file (an attacker with write access to the store), another
// logical id's registration of the same scope and plan gets in, but it can never be planned: the
// completion check reads the planned rows by their authenticated plan_id.
TEST(ManagedQueryStore, TheSamePlanCheckGoesThroughTheCorrelationLookup) {
  Fixture f;
  const auto owner = f.setup.register_query(digest("owner"));
  f.setup.store->mark_planned(owner.query_ref(), "plan-initial", digest("d"), 2, digest("r"));
  const auto other_decision =
      replace_event(f.setup.managed_input->decision_event(),
                    [](engine::EngineEvent::Fields& e) { e.event_id = "event-other"; });
  const auto intrude = [&] {
    return f.setup.store->register_query(
        digest("intruder"), f.setup.managed_input->session_started(), other_decision,
        f.setup.artifact->manifest_digest(), f.setup.artifact->planning_environment_digest());
  };
  CTX_EXPECT_THROW(intrude(), ManagedQueryStoreConflict, "scope and plan");
  sqlite_scalar(f.setup.store_path, "DELETE FROM managed_query_correlations");
  // The full check (ctx journal verify) sees the lookup no longer names the registration.
  CTX_EXPECT_THROW(f.setup.store->verify(), ManagedQueryStoreCorruption, "misses a registration");
  const auto intruder = intrude();
  CTX_EXPECT_THROW(f.setup.store->mark_planned(intruder.query_ref(), "plan-initial", digest("d"), 2,
                                               digest("r")),
                   ManagedQueryStoreConflict, "already planned by another logical identity");
  EXPECT_EQ(
      f.setup.store->find_planned_by_scope_and_plan(owner.decision_event().scope(), "plan-initial")
          ->logical_query_id(),
      digest("owner"));
  // The intruder's registration wrote its own lookup row; the owner's is still missing. Restored,
  // the store verifies; a lookup row for no registration is caught too.
  CTX_EXPECT_THROW(f.setup.store->verify(), ManagedQueryStoreCorruption, "misses a registration");
  sqlite_scalar(
      f.setup.store_path,
      "INSERT INTO managed_query_correlations VALUES ('plan-initial', '" + digest("owner") + "')");
  EXPECT_NO_THROW(f.setup.store->verify());
  sqlite_scalar(
      f.setup.store_path,
      "INSERT INTO managed_query_correlations VALUES ('plan-gone', '" + digest("nobody") + "')");
  CTX_EXPECT_THROW(f.setup.store->verify(), ManagedQueryStoreCorruption, "names no registration");
}

TEST(ManagedQueryStore, RejectsBadOpenInputs) {
  TempDir tmp;
  CTX_EXPECT_THROW(store::open_managed_query_store("relative.sqlite3", store_key()),
                   InvalidArgument, "absolute");
  CTX_EXPECT_THROW(store::open_managed_query_store(tmp.path() / "q.sqlite3", "short"),
                   InvalidArgument, "32 bytes");
  std::filesystem::create_directories(tmp.path() / "open");
  std::filesystem::permissions(tmp.path() / "open", std::filesystem::perms::all,
                               std::filesystem::perm_options::replace);
  EXPECT_THROW(store::open_managed_query_store(tmp.path() / "open" / "q.sqlite3", store_key()),
               ManagedQueryStoreUnavailable);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "open" / "q.sqlite3"));
}

TEST(ManagedQueryStore, AnotherInstallationKeyIsRefused) {
  Fixture f;
  const auto before = read_database(f.setup.store_path);
  CTX_EXPECT_THROW(store::open_managed_query_store(f.setup.store_path, std::string(32, 'k')),
                   ManagedQueryStoreCorruption, "authentication failed");
  EXPECT_EQ(read_database(f.setup.store_path), before);
}

TEST(ManagedQueryStore, TamperedRowsFailClosedWithoutMutation) {
  Fixture f;
  const auto record = f.setup.register_query(digest("tamper"));
  for (const std::string column : {"plan_id", "registration_bytes", "row_hmac"}) {
    SCOPED_TRACE(column);
    Fixture g;
    const auto owned = g.setup.register_query(digest("tamper"));
    sqlite_scalar(g.setup.store_path, "UPDATE managed_queries SET " + column + " = " +
                                          (column == "registration_bytes" ? "1" : "'x'"));
    const auto tampered = read_database(g.setup.store_path);
    CTX_EXPECT_THROW(g.setup.store->load(owned.query_ref()), ManagedQueryStoreCorruption,
                     "authentication failed");
    CTX_EXPECT_THROW(g.setup.register_query(digest("another")), ManagedQueryStoreCorruption,
                     "authentication failed");
    EXPECT_EQ(read_database(g.setup.store_path), tampered);
  }
  // A reference this store did not issue: well-formed, unknown.
  CTX_EXPECT_THROW(f.setup.store->load("mqr_" + std::string(64, 'f')), ManagedQueryStoreNotFound,
                   "unavailable");
  CTX_EXPECT_THROW(f.setup.store->load("../queries.sqlite3"), InvalidArgument,
                   "opaque managed-query reference");
  // A row written by another installation (another key) does not authenticate here.
  auto other = store::open_managed_query_store(f.tmp.path() / "other" / "queries.sqlite3",
                                               std::string(32, 'o'));
  const auto foreign = other->register_query(
      digest("foreign"), f.setup.managed_input->session_started(),
      f.setup.managed_input->decision_event(), f.setup.artifact->manifest_digest(),
      f.setup.artifact->planning_environment_digest());
  const auto row = sqlite_scalar(f.tmp.path() / "other" / "queries.sqlite3",
                                 "SELECT quote(registration_json) || ',' || row_hmac FROM "
                                 "managed_queries");
  const auto comma = row.rfind(',');
  sqlite_scalar(f.setup.store_path,
                "INSERT INTO managed_queries(logical_query_id, query_ref, registration_json, "
                "registration_bytes, row_hmac) VALUES ('" +
                    digest("foreign") + "', '" + foreign.query_ref() + "', " +
                    row.substr(0, comma) + ", length(" + row.substr(0, comma) + "), '" +
                    row.substr(comma + 1) + "')");
  const auto injected = read_database(f.setup.store_path);
  CTX_EXPECT_THROW(f.setup.store->load(foreign.query_ref()), ManagedQueryStoreCorruption,
                   "authentication failed");
  EXPECT_EQ(read_database(f.setup.store_path), injected);
  (void)record;
}

// The open reads the schema and the key row only; verify() reads the whole file. A damaged page
// of the query table: the open still succeeds, a load that reaches the page and verify() are
// typed DataLoss, and a tampered row fails verify() as it fails a load. Nothing is written.
TEST(ManagedQueryStore, VerifyChecksEveryPageAndRowAndWritesNothing) {
  Fixture f;
  const auto record = f.setup.register_query(digest("verify"));
  f.setup.store->verify();
  {
    Fixture g;
    const auto owned = g.setup.register_query(digest("verify"));
    sqlite_scalar(g.setup.store_path, "UPDATE managed_queries SET plan_id = 'x'");
    const auto tampered = read_database(g.setup.store_path);
    CTX_EXPECT_THROW(g.setup.store->verify(), ManagedQueryStoreCorruption, "authentication failed");
    EXPECT_EQ(read_database(g.setup.store_path), tampered);
    (void)owned;
  }
  // Every committed page into the main file, then one page of managed_queries overwritten.
  sqlite_scalar(f.setup.store_path, "PRAGMA wal_checkpoint(TRUNCATE)");
  const auto page_size = std::stol(sqlite_scalar(f.setup.store_path, "PRAGMA page_size"));
  const auto root = std::stol(sqlite_scalar(
      f.setup.store_path, "SELECT rootpage FROM sqlite_master WHERE name = 'managed_queries'"));
  ASSERT_GT(root, 1);
  {
    std::fstream file(f.setup.store_path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp((root - 1) * page_size);
    const std::string garbage(static_cast<std::size_t>(page_size), '\xee');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const auto damaged = read_database(f.setup.store_path);
  auto reopened = store::open_managed_query_store(f.setup.store_path, store_key());
  try {
    reopened->load(record.query_ref());
    ADD_FAILURE() << "a load through a damaged page succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
  }
  CTX_EXPECT_THROW(reopened->verify(), ManagedQueryStoreCorruption, "managed query store");
  EXPECT_EQ(read_database(f.setup.store_path), damaged);
}

TEST(ManagedQueryStore, RegistrationConflictsAreTyped) {
  Fixture f;
  const auto owner = f.setup.register_query(digest("owner"));
  const auto before = read_database(f.setup.store_path);
  // Same logical id, different content.
  auto other_decision =
      replace_event(f.setup.managed_input->decision_event(),
                    [](engine::EngineEvent::Fields& e) { e.event_id = "event-other"; });
  CTX_EXPECT_THROW(
      f.setup.store->register_query(digest("owner"), f.setup.managed_input->session_started(),
                                    other_decision, f.setup.artifact->manifest_digest(),
                                    f.setup.artifact->planning_environment_digest()),
      ManagedQueryStoreConflict, "different content");
  // Another logical id on the same scope and plan.
  CTX_EXPECT_THROW(
      f.setup.store->register_query(digest("intruder"), f.setup.managed_input->session_started(),
                                    other_decision, f.setup.artifact->manifest_digest(),
                                    f.setup.artifact->planning_environment_digest()),
      ManagedQueryStoreConflict, "scope and plan");
  // Malformed input.
  CTX_EXPECT_THROW(f.setup.store->register_query(
                       "not-a-digest", f.setup.managed_input->session_started(),
                       f.setup.managed_input->decision_event(), f.setup.artifact->manifest_digest(),
                       f.setup.artifact->planning_environment_digest()),
                   InvalidArgument, "SHA-256");
  // Completion must match the decision.
  CTX_EXPECT_THROW(
      f.setup.store->mark_planned(owner.query_ref(), "plan-other", digest("d"), 2, digest("r")),
      ManagedQueryStoreConflict, "does not match");
  EXPECT_EQ(read_database(f.setup.store_path), before);
  const auto planned =
      f.setup.store->mark_planned(owner.query_ref(), "plan-initial", digest("d"), 2, digest("r"));
  EXPECT_TRUE(planned.planned());
  EXPECT_TRUE(
      f.setup.store->mark_planned(owner.query_ref(), "plan-initial", digest("d"), 2, digest("r"))
          .planned());
  // Once planned, the scope and plan are still the owner's (found through its plan_id).
  const auto planned_before = read_database(f.setup.store_path);
  CTX_EXPECT_THROW(
      f.setup.store->register_query(digest("intruder"), f.setup.managed_input->session_started(),
                                    other_decision, f.setup.artifact->manifest_digest(),
                                    f.setup.artifact->planning_environment_digest()),
      ManagedQueryStoreConflict, "scope and plan are already reserved");
  EXPECT_EQ(read_database(f.setup.store_path), planned_before);
  CTX_EXPECT_THROW(
      f.setup.store->mark_planned(owner.query_ref(), "plan-initial", digest("e"), 2, digest("r")),
      ManagedQueryStoreConflict, "bound differently");
  EXPECT_FALSE(f.setup.store->find_pending_desired_set(seed_scope()).has_value());
  EXPECT_THROW(f.setup.store->load_latest_desired_set(owner.query_ref()),
               ManagedQueryStoreNotFound);
}

// Registrations of distinct sessions on one store: session `n` has its own scope, event ids and
// plan id, and its decision was made `n` seconds after 2030-01-01 (the retirement order).
struct Sessions {
  Fixture& f;

  std::pair<engine::EngineEvent, engine::EngineEvent> events(int n) const {
    const auto& started = f.setup.managed_input->session_started();
    const auto& decision = f.setup.managed_input->decision_event();
    const std::string suffix = "-capacity-" + std::to_string(n);
    const auto& s = started.scope();
    const auto scope = engine::ScopeRef::create(s.tenant_id(), s.workspace_id(), s.repository_id(),
                                                s.session_id() + suffix, s.exposure_id(),
                                                s.host_context_id(), s.parent_exposure_id());
    const std::string at = core::format_rfc3339(core::Timestamp{
        core::parse_rfc3339("2030-01-01T00:00:00Z").micros + std::int64_t{n} * 1'000'000});
    auto session_started = replace_event(started, [&](engine::EngineEvent::Fields& e) {
      e.scope = scope;
      e.event_id += suffix;
      e.correlation_id = plan_id(n);
      e.occurred_at = at;
    });
    auto intent = replace_event(decision, [&](engine::EngineEvent::Fields& e) {
      e.scope = scope;
      e.event_id += suffix;
      e.correlation_id = plan_id(n);
      e.causation_id = session_started.event_id();
      e.occurred_at = at;
    });
    return {std::move(session_started), std::move(intent)};
  }
  static std::string plan_id(int n) { return "plan-capacity-" + std::to_string(n); }
  ManagedQueryRecord register_session(int n,
                                      const ManagedQueryStore::RetirementCheck& check = {}) const {
    const auto e = events(n);
    return f.setup.store->register_query(digest("capacity-" + std::to_string(n)), e.first, e.second,
                                         f.setup.artifact->manifest_digest(),
                                         f.setup.artifact->planning_environment_digest(), check);
  }
  // Sessions 0..count-1, each planned (and with its input stored); their query refs.
  std::vector<std::string> fill(int count) const {
    std::vector<std::string> refs;
    for (int n = 0; n < count; ++n) {
      refs.push_back(register_session(n).query_ref());
      f.setup.store->put_input(plan_id(n), "{}");
      f.setup.store->mark_planned(refs.back(), plan_id(n), digest("d"), 2, digest("r"));
    }
    return refs;
  }
};

// The store's bound (runtime spec §4.2): 4096 registrations. Without a retirement check the
// next one is CapacityExceeded and leaves the file byte-identical; an identical registration of a
// stored one still returns it.
TEST(ManagedQueryStore, HoldsAtMost4096RegistrationsAndTheNextChangesNothing) {
  Fixture f;
  const Sessions sessions{f};
  std::string first_ref;
  for (int n = 0; n < 4096; ++n) {
    const auto record = sessions.register_session(n);
    if (n == 0) first_ref = record.query_ref();
  }
  EXPECT_EQ(sqlite_scalar(f.setup.store_path, "SELECT count(*) FROM managed_queries"), "4096");
  const auto before = read_database(f.setup.store_path);
  CTX_EXPECT_THROW(sessions.register_session(4096), ManagedQueryStoreCapacityExceeded,
                   "managed query store is full");
  EXPECT_EQ(read_database(f.setup.store_path), before);
  // Nothing is planned, so a check has nothing to retire.
  CTX_EXPECT_THROW(sessions.register_session(4096, [](const ManagedQueryRecord&) { return true; }),
                   ManagedQueryStoreCapacityExceeded, "managed query store is full");
  EXPECT_EQ(read_database(f.setup.store_path), before);
  EXPECT_EQ(sessions.register_session(0).query_ref(), first_ref);
  EXPECT_EQ(f.setup.store->load(first_ref).logical_query_id(), digest("capacity-0"));
}

// At capacity, a retirement check makes room: the oldest planned registrations it accepts go
// (kRetirementBatch of them), each with its input and lookup row, in the registration's own
// transaction; one it refuses stays; a check that accepts none leaves the file byte-identical.
TEST(ManagedQueryStore, AtCapacityTheOldestSettledRegistrationsAreRetiredToMakeRoom) {
  Fixture f;
  const Sessions sessions{f};
  const auto refs = sessions.fill(4096);
  const auto before = read_database(f.setup.store_path);
  CTX_EXPECT_THROW(sessions.register_session(4096, [](const ManagedQueryRecord&) { return false; }),
                   ManagedQueryStoreCapacityExceeded, "managed query store is full");
  EXPECT_EQ(read_database(f.setup.store_path), before);

  std::vector<std::string> offered;
  const auto record = sessions.register_session(4096, [&](const ManagedQueryRecord& old) {
    EXPECT_TRUE(old.planned());
    offered.push_back(old.query_ref());
    return old.query_ref() != refs[2];  // session 2 still needs its row
  });
  const int batch = ManagedQueryStore::kRetirementBatch;
  ASSERT_EQ(offered.size(), static_cast<std::size_t>(batch + 1));
  for (int n = 0; n <= batch; ++n) EXPECT_EQ(offered[n], refs[n]) << n;  // oldest first
  EXPECT_EQ(sqlite_scalar(f.setup.store_path, "SELECT count(*) FROM managed_queries"),
            std::to_string(4096 - batch + 1));
  for (int n = 0; n <= batch; ++n) {
    if (n == 2) {
      EXPECT_EQ(f.setup.store->load(refs[n]).query_ref(), refs[n]);
      EXPECT_TRUE(f.setup.store->find_input(Sessions::plan_id(n)).has_value());
      continue;
    }
    CTX_EXPECT_THROW(f.setup.store->load(refs[n]), ManagedQueryStoreNotFound, "unavailable");
    EXPECT_FALSE(f.setup.store->find_input(Sessions::plan_id(n)).has_value()) << n;
  }
  EXPECT_EQ(f.setup.store->load(refs[batch + 1]).query_ref(), refs[batch + 1]);
  EXPECT_EQ(f.setup.store->load(record.query_ref()).logical_query_id(), digest("capacity-4096"));
  // The lookup names exactly the planned registrations left (verify checks it), and a retired
  // session registers again.
  EXPECT_NO_THROW(f.setup.store->verify());
  EXPECT_EQ(sessions.register_session(0).query_ref(), refs[0]);
}

TEST(QueryStoreSchema, PinnedDigestIsTheReferences) {
  EXPECT_EQ(store::detail::reference_query_store_schema_digest(),
            store::detail::pinned_query_store_schema_digest());
}

// A store whose schema is not the reference (one index added by hand) is corruption on open.
TEST(QueryStoreSchema, AnAlteredSchemaIsCorruptionOnOpen) {
  TempDir tmp;
  const auto path = tmp.path() / "private" / "queries.sqlite3";
  const std::string key(32, 'k');
  store::open_managed_query_store(path, key);
  sqlite_scalar(path, "CREATE INDEX extra ON managed_queries(plan_id, query_ref)");
  CTX_EXPECT_THROW(store::open_managed_query_store(path, key), ManagedQueryStoreCorruption,
                   "not the expected schema");
}

}  // namespace
}  // namespace ctx::runtime
