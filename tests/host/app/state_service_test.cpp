// StateService and CatalogInputAuthority on a real state dir (the example catalog): exact
// retries, host neutrality, replacement plans, a tampered registration, and recovery after a
// real process death (fork + SIGKILL at the service's crash points).
#include "host/app/state_service.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctx/loader/lock_file.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/app/state_layout.hpp"
#include "host/core/crypto.hpp"
#include "host/runtime/consent/consent_broker.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/errors.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/journal/raw_sqlite.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;
using ctx::testing::read_database;
using ctx::testing::TempDir;

const fs::path kExamples = fs::path(CTX_EXAMPLES_DIR) / "catalog";

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CurrentWork pdf_work(std::vector<std::string> signals = {"please", "export", "the", "quarterly",
                                                         "report", "as", "a", "PDF"},
                     std::int64_t limit = 3) {
  return CurrentWork{"local", "home", "repo-1", "session-1", std::move(signals), {"markdown"},
                     limit};
}

// The capability ids a plan selected, in plan order.
std::vector<std::string> selected_ids(const ManagedQueryServiceResult& prepared) {
  std::vector<std::string> ids;
  for (const auto& selection : prepared.prepared().selections()) {
    ids.push_back(selection.capability_id());
  }
  return ids;
}

struct State {
  TempDir temp;
  fs::path dir = temp.path() / "state";
  State() {
    init_state_dir(dir);
    import_catalog(kExamples, dir);
  }
  // Pins the real skill installer, so that chosen installs publish a consent challenge.
  void pin_installer() const {
    const plugins::PluginLoader loader(dir);
    plugins::LockFile::update(dir / "plugins.lock.json", [&](plugins::LockFile& lock) {
      lock.upsert(loader.inspect_for_pin(CTX_SKILL_INSTALLER_SO));
    });
  }
  // The input authority's registrations (rows of the managed query store).
  long input_rows() const {
    return ctx::testing::service::sqlite_count(dir / "service/queries.sqlite3", "managed_inputs");
  }
};

TEST(StateService, PreparesARealPlanAndAnExactRetryReusesIt) {
  State state;
  auto service = StateService::open(state.dir);
  const auto first = service->prepare(pdf_work());
  EXPECT_EQ(first.prepared().status(), engine::PlanStatus::kReady);
  ASSERT_FALSE(first.prepared().selections().empty());
  EXPECT_EQ(first.prepared().selections().front().capability_id(), "skill:pdf-export");
  EXPECT_EQ(first.prepared().journal_revision(), 2);
  const auto journal = read(state.dir / "service/journal.sqlite3");
  // Another process (a new service on the same files) retrying the same work.
  service.reset();
  auto again = StateService::open(state.dir);
  const auto retry = again->prepare(pdf_work());
  EXPECT_EQ(retry.query_ref(), first.query_ref());
  EXPECT_EQ(retry.prepared().decision_digest(), first.prepared().decision_digest());
  EXPECT_EQ(state.input_rows(), 1);
  EXPECT_EQ(again->reopen(first.query_ref()).prepared().plan_id(), first.prepared().plan_id());
}

// Raw tokens that are not vocabulary, their case and order do not change the work: the same
// query, whichever host adapter produced them.
// The descriptors this process holds open on `file` (one per SQLite connection to it).
int open_descriptors_of(const fs::path& file) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(entry.path(), ec) == file) ++count;
  }
  return count;
}

TEST(StateService, TheAuthorityTheServiceAndItsCompositionsShareOneJournalConnection) {
  State state;
  state.pin_installer();
  auto service = StateService::open(state.dir);
  const auto prepared = service->prepare(pdf_work());
  const auto ids = selected_ids(prepared);
  ASSERT_FALSE(ids.empty());
  // set_desired commits through the composition, reads the record back through the service and
  // publishes the consent challenge from the journal's head.
  const auto desired = service->set_first_desired(prepared.query_ref(), ids);
  ASSERT_TRUE(desired.has_value());
  ASSERT_TRUE(desired->challenge().has_value());
  const fs::path journal = fs::canonical(state.dir / "service/journal.sqlite3");
  EXPECT_EQ(open_descriptors_of(journal), 1);
  service.reset();
  EXPECT_EQ(open_descriptors_of(journal), 0);
}

// While the session's consent is pending, other work cannot replace its plan (§1.4): it is
// refused before anything is stored, so prompts made meanwhile take no registration (the query
// store holds 4096) and leave every store byte-identical; the current plan still reopens.
TEST(StateService, WorkRefusedWhileAConsentIsPendingWritesNothing) {
  State state;
  state.pin_installer();
  auto service = StateService::open(state.dir);
  const auto prepared = service->prepare(pdf_work());
  const auto ids = selected_ids(prepared);
  const auto desired = service->set_first_desired(prepared.query_ref(), ids);
  ASSERT_TRUE(desired.has_value() && desired->challenge().has_value());
  const auto queries = read_database(state.dir / "service/queries.sqlite3");
  const auto journal = read_database(state.dir / "service/journal.sqlite3");
  for (const auto& signals : std::vector<std::vector<std::string>>{
           {"write", "sql", "migrations"}, {"export", "pdf", "invoices"}, {"lint", "python"}}) {
    CTX_EXPECT_THROW(service->prepare(pdf_work(signals)), ManagedQueryError,
                     "settle pending authority");
  }
  EXPECT_EQ(read_database(state.dir / "service/queries.sqlite3"), queries);
  EXPECT_EQ(read_database(state.dir / "service/journal.sqlite3"), journal);
  const auto current = service->reopen_current(pdf_work({"write", "sql", "migrations"}));
  ASSERT_TRUE(current.has_value());
  EXPECT_EQ(current->query_ref(), prepared.query_ref());
}

// A full query store retires its oldest settled sessions when new work registers (the hook
// keeps planning past 4096 sessions): a session whose consent can still be given keeps its row; a
// retired session plans again, its start read back from the journal.
TEST(StateService, AFullStoreRetiresTheOldestSettledSessionsAndARetiredOnePlansAgain) {
  State state;
  state.pin_installer();
  const auto work = [](const std::string& session, std::vector<std::string> signals,
                       std::int64_t limit) {
    return CurrentWork{"local", "home", "repo-1", session, std::move(signals), {"markdown"}, limit};
  };
  auto service = StateService::open(state.dir);
  // The two oldest sessions: one awaiting a live consent, one settled (an abstained plan).
  const auto pending = service->prepare(work("session-pending", {"export", "pdf"}, 3));
  const auto desired = service->set_first_desired(pending.query_ref(), selected_ids(pending));
  ASSERT_TRUE(desired.has_value() && desired->challenge().has_value());
  const auto settled = service->prepare(work("session-settled", {"export", "pdf"}, 0));
  ASSERT_EQ(settled.prepared().status(), engine::PlanStatus::kAbstained);

  // The rest of the store: planned registrations of later sessions (no journal streams).
  auto store = store::open_managed_query_store(state.dir / "service/queries.sqlite3",
                                               read_installation_key(state.dir));
  const auto template_record = store->load(settled.query_ref());
  for (int n = 0; n < 4094; ++n) {
    const std::string suffix = "-filler-" + std::to_string(n);
    const std::string plan_id = "plan-filler-" + std::to_string(n);
    const auto& s = template_record.session_started().scope();
    const auto scope =
        engine::ScopeRef::create(s.tenant_id(), s.workspace_id(), s.repository_id(),
                                 s.session_id() + suffix, s.exposure_id(), s.host_context_id());
    engine::EngineEvent::Fields start = template_record.session_started().fields();
    start.scope = scope;
    start.event_id += suffix;
    start.correlation_id = plan_id;
    start.occurred_at = "2030-01-01T00:00:00Z";
    const auto started = engine::EngineEvent::create(std::move(start));
    engine::EngineEvent::Fields intent = template_record.decision_event().fields();
    intent.scope = scope;
    intent.event_id += suffix;
    intent.correlation_id = plan_id;
    intent.causation_id = started.event_id();
    intent.occurred_at = "2030-01-01T00:00:00Z";
    const auto record = store->register_query(
        core::sha256_hex(suffix), started, engine::EngineEvent::create(std::move(intent)),
        template_record.artifact_manifest_digest(),
        template_record.planning_environment_digest());
    store->mark_planned(record.query_ref(), plan_id, core::sha256_hex("d"), 2,
                        core::sha256_hex("r"));
  }
  ASSERT_EQ(ctx::testing::service::sqlite_count(state.dir / "service/queries.sqlite3",
                                                "managed_queries"),
            4096);

  const auto fresh = service->prepare(work("session-new", {"export", "pdf"}, 3));
  EXPECT_EQ(fresh.prepared().status(), engine::PlanStatus::kReady);
  EXPECT_EQ(store->load(pending.query_ref()).query_ref(), pending.query_ref());
  CTX_EXPECT_THROW(store->load(settled.query_ref()), ManagedQueryStoreNotFound, "unavailable");
  EXPECT_EQ(ctx::testing::service::sqlite_count(state.dir / "service/queries.sqlite3",
                                                "managed_queries"),
            4096 - ManagedQueryStore::kRetirementBatch + 1);
  // The retired session goes on: new work in it plans on its journaled stream.
  const auto again = service->prepare(work("session-settled", {"write", "sql", "migrations"}, 3));
  EXPECT_EQ(again.prepared().journal_revision(), 3);
  EXPECT_NE(again.prepared().plan_id(), settled.prepared().plan_id());
  EXPECT_NO_THROW(store->verify());
}

// A challenge for another install, published straight to the state dir's consent store.
ConsentChallenge filler_challenge(int n, std::string expires_at) {
  const auto digest = [n](std::string_view label) {
    return core::sha256_hex(std::string(label) + ":" + std::to_string(n));
  };
  ConsentChallengeFields f;
  f.challenge_id = "filler-" + std::to_string(n);
  f.audience = std::string(kStateConsentAudience);
  f.workspace_identity_digest = digest("workspace");
  f.scope = core::Json{{"repository", "repo-1"}, {"session", "filler"}, {"tenant", "local"},
                       {"workspace", "home"}};
  f.capability_id = "skill:filler";
  f.kind = engine::CapabilityKind::kSkill;
  for (auto* field : {&f.source_digest, &f.catalog_snapshot_digest, &f.install_plan_digest,
                      &f.descriptor_digest, &f.material_identity_digest,
                      &f.requested_action_content_digest, &f.policy_snapshot_digest,
                      &f.release_root_digest}) {
    *field = digest("field-" + std::to_string(field - &f.source_digest));
  }
  f.plan_id = "plan-filler";
  f.execution_binding_digest = execution_binding_digest(
      "ctx-skill-installer-v1", digest("installer"), digest("host"), digest("target-root"));
  f.selection_digest = selection_binding_digest(core::Json{{"capability", "filler"}});
  f.requested_action_id = "action-install-filler-" + std::to_string(n);
  f.requested_action_precondition_revision = 2;
  f.expires_at = std::move(expires_at);
  return ConsentChallenge::create(f);
}

// The consent store holds at most 4096 challenges. When it is full, the next challenge retires
// the oldest ones that have expired undecided (or were settled), in its own transaction; a session
// whose expired challenge was retired still answers, with no challenge to offer, exactly as it
// did while the expired row was kept.
TEST(StateService, AFullConsentStoreRetiresExpiredChallengesAndTheirSessionsStillAnswer) {
  State state;
  state.pin_installer();
  auto clock = std::make_shared<ctx::testing::service::FixedClock>("2026-08-03T12:00:00Z");
  auto service = StateService::open(state.dir, clock);
  const auto work = [](const std::string& session) {
    return CurrentWork{"local", "home", "repo-1", session, {"export", "pdf"}, {"markdown"}, 3};
  };
  const auto old = service->prepare(work("session-old"));
  const auto old_desired = service->set_first_desired(old.query_ref(), selected_ids(old));
  ASSERT_TRUE(old_desired.has_value() && old_desired->challenge().has_value());
  const fs::path consent = state.dir / "service/consent.sqlite3";
  clock->set("2026-08-03T12:00:01Z");
  {
    ConsentBroker other(consent, read_installation_key(state.dir),
                        std::string(kStateConsentAudience), *clock);
    for (int n = 0; n < 4095; ++n) other.prepare(filler_challenge(n, "2026-08-03T12:30:00Z"));
  }
  ASSERT_EQ(ctx::testing::service::sqlite_count(consent, "consent_challenges"), 4096);

  clock->set("2026-08-03T13:30:00Z");  // every challenge so far has expired undecided
  const auto fresh = service->prepare(work("session-new"));
  const auto fresh_desired = service->set_first_desired(fresh.query_ref(), selected_ids(fresh));
  ASSERT_TRUE(fresh_desired.has_value() && fresh_desired->challenge().has_value());
  EXPECT_EQ(ctx::testing::service::sqlite_count(consent, "consent_challenges"),
            4096 - static_cast<long>(kConsentRetirementBatch) + 1);
  const std::string old_digest = old_desired->challenge()->challenge_digest();
  CTX_EXPECT_THROW(service->challenge(old_digest), ConsentBrokerChallengeNotFound, "unknown");
  // The old session's exact retry answers, with nothing to approve.
  const auto retry = service->prepare(work("session-old"));
  EXPECT_EQ(retry.query_ref(), old.query_ref());
  EXPECT_FALSE(retry.challenge().has_value());
}

// A consent the user never gave holds the session's plan only until its challenge expires: the
// next work in that session commits the expiry (once) and plans anew, with a fresh challenge;
// before the expiry the same work is still refused and changes nothing.
TEST(StateService, AnExpiredConsentNoLongerHoldsTheSessionsPlan) {
  State state;
  state.pin_installer();
  auto clock = std::make_shared<ctx::testing::service::FixedClock>("2026-08-03T12:00:00Z");
  auto service = StateService::open(state.dir, clock);
  const auto first = service->prepare(pdf_work());
  const auto desired = service->set_first_desired(first.query_ref(), selected_ids(first));
  ASSERT_TRUE(desired.has_value() && desired->challenge().has_value());
  const auto other = pdf_work({"write", "sql", "migrations"}, 1);  // a plan without pdf-export
  clock->set("2026-08-03T12:30:00Z");  // still within the challenge's hour
  const auto journal = read_database(state.dir / "service/journal.sqlite3");
  CTX_EXPECT_THROW(service->prepare(other), ManagedQueryError, "settle pending authority");
  EXPECT_EQ(read_database(state.dir / "service/journal.sqlite3"), journal);

  clock->set("2026-08-03T13:30:00Z");
  const auto later = service->prepare(other);
  EXPECT_NE(later.query_ref(), first.query_ref());
  EXPECT_EQ(later.prepared().status(), engine::PlanStatus::kReady);
  // The old challenge's plan has been replaced; recovering it commits nothing more.
  const auto settled = read_database(state.dir / "service/journal.sqlite3");
  EXPECT_EQ(service->recover_consent(desired->challenge()->challenge_digest()).resolution.outcome(),
            ManagedConsentOutcome::kSuperseded);
  EXPECT_EQ(read_database(state.dir / "service/journal.sqlite3"), settled);
  const auto chosen = service->set_first_desired(later.query_ref(), selected_ids(later));
  ASSERT_TRUE(chosen.has_value() && chosen->challenge().has_value());
  EXPECT_NE(chosen->challenge()->challenge_digest(), desired->challenge()->challenge_digest());
}

// `ctx policy set` while a session awaits consent strands it: the request was asked for under the
// old policy, so it can no longer be published or decided. The session's work is refused with a
// typed error naming the capability and when the request lapses, and nothing durable changes;
// the old policy restored, it asks again; once it has lapsed, the expiry is committed and the
// session plans anew under the new policy.
TEST(StateService, APolicyChangeStrandsAPendingConsentUntilItLapses) {
  State state;
  state.pin_installer();
  auto clock = std::make_shared<ctx::testing::service::FixedClock>("2026-08-03T12:00:00Z");
  auto service = StateService::open(state.dir, clock);
  const auto first = service->prepare(pdf_work());
  const auto desired = service->set_first_desired(first.query_ref(), selected_ids(first));
  ASSERT_TRUE(desired.has_value() && desired->challenge().has_value());
  const InstallPolicyStore policies(state.dir / "install-policy");
  ASSERT_EQ(StatePaths::of(state.dir).install_policy, state.dir / "install-policy");
  InstallConsentPolicy automatic;
  automatic.skill_mode = InstallMode::kPreapprovedAuto;
  policies.persist(automatic);

  clock->set("2026-08-03T12:30:00Z");
  const fs::path journal_path = state.dir / "service/journal.sqlite3";
  const fs::path consent_path = state.dir / "service/consent.sqlite3";
  const auto journal = read_database(journal_path);
  const auto consent = read_database(consent_path);
  const auto other = pdf_work({"write", "sql", "migrations"}, 1);
  try {
    (void)service->prepare(pdf_work());
    ADD_FAILURE() << "a stranded consent must refuse the session's work";
  } catch (const ManagedConsentPolicyChangedError& e) {
    EXPECT_EQ(e.capability_id(), desired->challenge()->capability_id());
    EXPECT_EQ(e.expires_at(), desired->challenge()->expires_at());
  }
  CTX_EXPECT_THROW(service->prepare(other), ManagedQueryError, "settle pending authority");
  CTX_EXPECT_THROW(service->reopen_current(other), ManagedConsentPolicyChangedError,
                   "no longer exact");
  EXPECT_TRUE(service->pending_challenges().empty());
  EXPECT_EQ(read_database(journal_path), journal);
  EXPECT_EQ(read_database(consent_path), consent);

  policies.persist(InstallConsentPolicy::safe_default());  // set back: it asks again
  const auto restored = service->prepare(pdf_work());
  ASSERT_TRUE(restored.challenge().has_value());
  EXPECT_EQ(restored.challenge()->challenge_digest(), desired->challenge()->challenge_digest());
  policies.persist(automatic);

  clock->set("2026-08-03T13:30:00Z");  // lapsed: the same work plans again, with nothing pending
  const auto again = service->prepare(pdf_work());
  EXPECT_EQ(again.query_ref(), first.query_ref());
  EXPECT_FALSE(again.challenge().has_value());
  EXPECT_NE(read_database(journal_path), journal);
  const auto later = service->prepare(other);
  EXPECT_EQ(later.prepared().status(), engine::PlanStatus::kReady);
  EXPECT_NE(later.query_ref(), first.query_ref());
}

// A state directory moved while a session awaits consent: the published challenge is bound to
// the old install target and workspace, so it can never be decided here and the session's
// prompts answer with their plan and nothing to approve — no error, no byte of the consent store
// changed.
TEST(StateService, AMovedStateDirAnswersAPendingSessionWithNothingToApprove) {
  State state;
  state.pin_installer();
  auto clock = std::make_shared<ctx::testing::service::FixedClock>("2026-08-03T12:00:00Z");
  std::string first_ref;
  std::string first_digest;
  {
    auto service = StateService::open(state.dir, clock);
    const auto prepared = service->prepare(pdf_work());
    const auto desired = service->set_first_desired(prepared.query_ref(), selected_ids(prepared));
    ASSERT_TRUE(desired.has_value() && desired->challenge().has_value());
    first_ref = prepared.query_ref();
    first_digest = desired->challenge()->challenge_digest();
  }
  const fs::path moved = state.temp.path() / "moved-state";
  fs::rename(state.dir, moved);
  auto service = StateService::open(moved, clock);
  const fs::path consent = moved / "service/consent.sqlite3";
  const auto before = read_database(consent);
  const auto retry = service->prepare(pdf_work());
  EXPECT_EQ(retry.query_ref(), first_ref);
  EXPECT_FALSE(retry.challenge().has_value());
  const auto again = service->set_first_desired(retry.query_ref(), selected_ids(retry));
  EXPECT_FALSE(again.has_value() && again->challenge().has_value());
  EXPECT_EQ(read_database(consent), before);
  EXPECT_NO_THROW(service->challenge(first_digest));  // the old challenge is still published
}

// A state dir whose skills install under a preapproved-auto policy and activate in a project's
// Claude Code skills directory (the real installer and host adapter modules).
struct AutoState : State {
  fs::path project = temp.path() / "project";
  AutoState() {
    pin_installer();
    const plugins::PluginLoader loader(dir);
    plugins::LockFile::update(dir / "plugins.lock.json", [&](plugins::LockFile& lock) {
      lock.upsert(loader.inspect_for_pin(CTX_CLAUDE_CODE_HOST_SO));
    });
    fs::create_directories(project);
    set_activation_target(dir, "claude-code", project);
    InstallConsentPolicy automatic;
    automatic.skill_mode = InstallMode::kPreapprovedAuto;
    InstallPolicyStore(StatePaths::of(dir).install_policy).persist(automatic);
  }
  fs::path skill(const std::string& name) const { return project / ".claude/skills" / name; }
  // `work` as a session running in the project (StateService::place_in_project).
  CurrentWork placed(const StateService& service, CurrentWork work) const {
    service.place_in_project(work, "claude-code", project / "src");
    return work;
  }
  long deactivation_receipts() const {
    return ctx::testing::journal::raw_count(
        dir / "service/journal.sqlite3",
        "engine_journal WHERE event_id LIKE 'ctx-deactivation-receipt-%'");
  }
};

// A session in a subfolder of a project is placed in that project: its token, and the project's
// folder (whose manifests give its languages); a session elsewhere keeps its own directory.
TEST(StateService, ASessionIsPlacedInItsProjectWithTheProjectsFolder) {
  AutoState state;
  auto service = StateService::open(state.dir);
  const CurrentWork placed = state.placed(*service, pdf_work());
  EXPECT_EQ(placed.repository.rfind("prj-", 0), 0u) << placed.repository;
  EXPECT_EQ(placed.project_dir, state.project);
  CurrentWork elsewhere = pdf_work();
  service->place_in_project(elsewhere, "claude-code", state.temp.path() / "other");
  EXPECT_EQ(elsewhere.repository, pdf_work().repository);
  EXPECT_EQ(elsewhere.project_dir, state.temp.path() / "other");
}

const std::string kPdfSkill = "skill:pdf-export";
CurrentWork sql_work() { return pdf_work({"write", "sql", "migrations"}, 1); }

bool asks_to_deactivate(const ManagedQueryServiceResult& result, const std::string& id) {
  for (const auto& action : result.actions()) {
    if (action.kind() == engine::ActionKind::kDeactivateCapability &&
        action.entity_id() == std::optional<std::string>(id)) {
      return true;
    }
  }
  return false;
}

// Installs and activates pdf-export in the session of pdf_work(), then moves the session to
// other work: that plan asks to deactivate it. Returns the new plan's query ref.
std::string activate_then_shift(StateService& service, const AutoState& state) {
  const auto first = service.prepare(state.placed(service, pdf_work()));
  const auto desired = service.set_first_desired(first.query_ref(), {kPdfSkill});
  EXPECT_TRUE(desired.has_value() && !desired->challenge().has_value());
  const auto activated = service.activate_chosen(first.query_ref(), kPdfSkill);
  EXPECT_TRUE(activated.has_value() && activated->settled &&
              activated->outcome == engine::Outcome::kApplied);
  EXPECT_TRUE(fs::exists(state.skill("pdf-export") / "SKILL.md"));
  EXPECT_FALSE(service.activate_chosen(first.query_ref(), kPdfSkill).has_value());
  const auto shifted = service.prepare(state.placed(service, sql_work()));
  EXPECT_NE(shifted.query_ref(), first.query_ref());
  EXPECT_TRUE(asks_to_deactivate(shifted, kPdfSkill));
  return shifted.query_ref();
}

// A preapproved skill is installed and activated where the host loads skills; when the session
// moves to work whose plan drops it, the plan's deactivation is executed (the skill leaves the
// host's directory, one receipt is journaled) and only then does the session plan on.
TEST(StateService, APlanThatDropsAnActiveSkillDeactivatesItAndTheSessionPlansOn) {
  AutoState state;
  auto service = StateService::open(state.dir);
  const std::string shifted = activate_then_shift(*service, state);
  // Until the deactivation is settled, the session's next work is refused.
  CTX_EXPECT_THROW(service->prepare(state.placed(*service, pdf_work({"export", "pdf"}, 2))),
                   ManagedQueryError, "settle pending authority");
  const auto released = service->release_deactivations(shifted);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].capability_id, kPdfSkill);
  EXPECT_EQ(released[0].outcome, engine::Outcome::kApplied);
  EXPECT_TRUE(released[0].settled);
  EXPECT_FALSE(fs::exists(state.skill("pdf-export")));
  EXPECT_EQ(state.deactivation_receipts(), 1);
  EXPECT_TRUE(service->release_deactivations(shifted).empty());  // nothing more to do
  EXPECT_EQ(state.deactivation_receipts(), 1);
  const auto next = service->prepare(state.placed(*service, pdf_work({"export", "pdf"}, 2)));
  EXPECT_EQ(next.prepared().status(), engine::PlanStatus::kReady);
  EXPECT_NE(next.query_ref(), shifted);
}

// Two sessions of one project activate the same skill in its shared skills directory: when the
// first one's plan drops it, the skill stays for the other (its deactivation is settled without
// the installer); when the second one's plan drops it too, it leaves the directory.
TEST(StateService, ASkillTwoSessionsShareLeavesOnlyWhenTheLastDropsIt) {
  AutoState state;
  auto service = StateService::open(state.dir);
  const auto in_session = [&](CurrentWork work, const std::string& session) {
    work.session = session;
    return state.placed(*service, std::move(work));
  };
  std::vector<std::string> shifted;
  for (const std::string session : {"session-a", "session-b"}) {
    const auto first = service->prepare(in_session(pdf_work(), session));
    ASSERT_TRUE(service->set_first_desired(first.query_ref(), {kPdfSkill}).has_value());
    const auto activated = service->activate_chosen(first.query_ref(), kPdfSkill);
    ASSERT_TRUE(activated.has_value() && activated->outcome == engine::Outcome::kApplied);
  }
  for (const std::string session : {"session-a", "session-b"}) {
    const auto moved = service->prepare(in_session(sql_work(), session));
    ASSERT_TRUE(asks_to_deactivate(moved, kPdfSkill));
    shifted.push_back(moved.query_ref());
  }
  const auto first_release = service->release_deactivations(shifted[0]);
  ASSERT_EQ(first_release.size(), 1u);
  EXPECT_TRUE(first_release[0].settled);
  EXPECT_TRUE(fs::exists(state.skill("pdf-export") / "SKILL.md"));  // session-b still uses it
  const auto second_release = service->release_deactivations(shifted[1]);
  ASSERT_EQ(second_release.size(), 1u);
  EXPECT_TRUE(second_release[0].settled);
  EXPECT_FALSE(fs::exists(state.skill("pdf-export")));
  EXPECT_EQ(state.deactivation_receipts(), 2);
}

// A deactivation killed (SIGKILL) after the installer deactivated the skill, or after its
// receipt committed, is finished by the next process with exactly one receipt.
TEST(StateService, ADeactivationKilledAtEachStepIsFinishedByTheNextProcess) {
  for (const auto point : crash_points::kDeactivation) {
    SCOPED_TRACE(std::string(point));
    AutoState state;
    std::string shifted;
    {
      auto service = StateService::open(state.dir);
      shifted = activate_then_shift(*service, state);
    }  // no SQLite connection is open across the fork
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto service = StateService::open(state.dir);
      CrashPointArmed armed(point, 0, CrashMode::kKill);
      (void)service->release_deactivations(shifted);
      ::_exit(3);  // not reached when the crash point fired
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    EXPECT_FALSE(fs::exists(state.skill("pdf-export")));  // the installer did deactivate it
    auto service = StateService::open(state.dir);
    const auto released = service->release_deactivations(shifted);
    EXPECT_EQ(released.size(), point == crash_points::kAfterDeactivation ? 1u : 0u);
    EXPECT_EQ(state.deactivation_receipts(), 1);
    EXPECT_TRUE(service->release_deactivations(shifted).empty());
    EXPECT_EQ(service->prepare(state.placed(*service, pdf_work({"export", "pdf"}, 2)))
                  .prepared()
                  .status(),
              engine::PlanStatus::kReady);
  }
}

TEST(StateService, EquivalentWorkFromDifferentHostsIsOneQuery) {
  State state;
  auto service = StateService::open(state.dir);
  const auto claude = service->prepare(pdf_work({"Export", "PDF", "report", "zzzunknownword"}));
  const auto codex = service->prepare(pdf_work({"pdf", "the", "report", "export", "EXPORT"}));
  EXPECT_EQ(claude.query_ref(), codex.query_ref());
  EXPECT_EQ(claude.prepared().plan_id(), codex.prepared().plan_id());
}

TEST(StateService, OtherWorkInTheSessionReplacesThePlanAndSupersedesTheOldQuery) {
  State state;
  auto service = StateService::open(state.dir);
  const auto first = service->prepare(pdf_work());
  const auto replacement = service->prepare(pdf_work({"export", "pdf"}, 0));
  EXPECT_NE(replacement.prepared().plan_id(), first.prepared().plan_id());
  EXPECT_EQ(replacement.prepared().status(), engine::PlanStatus::kAbstained);
  EXPECT_EQ(replacement.prepared().abstention_code(),
            std::optional(engine::AbstentionCode::kLimitZero));
  EXPECT_EQ(replacement.prepared().journal_revision(), 3);
  CTX_EXPECT_THROW(service->reopen(first.query_ref()), ManagedQuerySupersededError, "superseded");
  // The session's current plan is the replacement.
  const auto current = service->reopen_current(pdf_work());
  ASSERT_TRUE(current.has_value());
  EXPECT_EQ(current->query_ref(), replacement.query_ref());
}

TEST(StateService, ATamperedRegistrationFailsTypedAndChangesNothing) {
  State state;
  auto service = StateService::open(state.dir);
  service->prepare(pdf_work());
  ASSERT_EQ(state.input_rows(), 1);
  service.reset();
  // One byte of the stored registration, altered in the file (the row's HMAC no longer holds).
  ctx::testing::service::sqlite_scalar(
      state.dir / "service/queries.sqlite3",
      "UPDATE managed_inputs SET input_json = "
      "CAST(replace(CAST(input_json AS TEXT), 'managing', 'Managing') AS BLOB)");
  const auto journal = read_database(state.dir / "service/journal.sqlite3");
  const auto queries = read_database(state.dir / "service/queries.sqlite3");
  auto reopened = StateService::open(state.dir);
  CTX_EXPECT_THROW(reopened->prepare(pdf_work()), ManagedQueryStoreCorruption,
                   "authentication failed");
  EXPECT_EQ(read_database(state.dir / "service/journal.sqlite3"), journal);
  EXPECT_EQ(read_database(state.dir / "service/queries.sqlite3"), queries);
}

// The session head is read and verified at every use, also once this service has decoded it: a
// head state altered in place under the open service is corruption, never the state decoded
// before.
TEST(StateService, AHeadAlteredUnderAnOpenServiceIsCorruption) {
  State state;
  auto service = StateService::open(state.dir);
  service->prepare(pdf_work());
  const auto plan = service->current_plan(pdf_work());
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->revision, 2);
  ctx::testing::service::sqlite_scalar(state.dir / "service/journal.sqlite3",
                                       "UPDATE engine_streams SET state_json = state_json || ' '");
  CTX_EXPECT_THROW(service->current_plan(pdf_work()), engine::JournalCorruption, "");
}

// A registration an earlier build kept as a file (<service>/inputs/<plan id>.json, its own mac)
// is still found: the same work in a new process is an exact retry of it, nothing re-registered.
TEST(StateService, ARegistrationAnEarlierBuildKeptAsAFileIsStillReused) {
  State state;
  const fs::path queries = state.dir / "service/queries.sqlite3";
  const auto first = StateService::open(state.dir)->prepare(pdf_work());
  const std::string plan_id =
      ctx::testing::service::sqlite_scalar(queries, "SELECT plan_id FROM managed_inputs");
  const std::string input = ctx::testing::service::sqlite_scalar(
      queries, "SELECT CAST(input_json AS TEXT) FROM managed_inputs");
  ASSERT_FALSE(plan_id.empty());
  ctx::testing::service::sqlite_scalar(queries, "DELETE FROM managed_inputs");
  core::Json legacy = core::parse_json(input);
  legacy["mac"] = core::hmac_sha256_hex(read_installation_key(state.dir),
                                        std::string("ctx.managed-input-v1") + '\0' + input);
  const fs::path file = state.dir / "service/inputs" / (plan_id + ".json");
  { std::ofstream(file, std::ios::binary) << core::canonical_json(legacy) << "\n"; }
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write,
                  fs::perm_options::replace);
  const auto retry = StateService::open(state.dir)->prepare(pdf_work());
  EXPECT_EQ(retry.query_ref(), first.query_ref());
  EXPECT_EQ(retry.prepared().journal_revision(), 2);
  EXPECT_EQ(state.input_rows(), 0);
  // Its mac is checked as before.
  std::string bytes = read(file);
  bytes[bytes.find("managing")] = 'M';
  { std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes; }
  CTX_EXPECT_THROW(StateService::open(state.dir)->prepare(pdf_work()),
                   ManagedQueryStoreCorruption, "authentication failed");
}

// A real process death at each of the service's prepare steps: the next process preparing the
// same work finishes it exactly once (the stored registration is reused, not replaced).
TEST(StateService, APreparerKilledAtEachStepIsFinishedByTheNextProcess) {
  for (const auto point : {service_crash_points::kAfterRegistration,
                           service_crash_points::kAfterPlanCommit,
                           service_crash_points::kAfterPlanMark}) {
    SCOPED_TRACE(std::string(point));
    State state;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto service = StateService::open(state.dir);
      CrashPointArmed armed(point, 0, CrashMode::kKill);
      service->prepare(pdf_work());
      ::_exit(3);  // not reached when the crash point fired
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    auto service = StateService::open(state.dir);
    const auto result = service->prepare(pdf_work());
    EXPECT_EQ(result.prepared().status(), engine::PlanStatus::kReady);
    EXPECT_EQ(result.prepared().journal_revision(), 2);  // one SessionStarted, one plan
    EXPECT_EQ(state.input_rows(), 1);
    EXPECT_EQ(service->reopen(result.query_ref()).prepared().plan_id(),
              result.prepared().plan_id());
  }
}

// A session's stream is bound to one planning environment: after another catalog is imported,
// the same host session plans again on a fresh stream instead of failing.
TEST(StateService, ANewCatalogMidSessionStartsAFreshStream) {
  State state;
  const auto first = StateService::open(state.dir)->prepare(pdf_work());
  const fs::path changed = state.temp.path() / "catalog";
  fs::copy(kExamples, changed, fs::copy_options::recursive);
  std::ofstream(changed / "harnesses/extra-runner.json")
      << R"({"name":"extra-runner","description":"Runs extra checks for tests"})";
  ASSERT_TRUE(import_catalog(changed, state.dir).changed);
  auto service = StateService::open(state.dir);
  const auto second = service->prepare(pdf_work());
  EXPECT_EQ(second.prepared().status(), engine::PlanStatus::kReady);
  EXPECT_EQ(second.prepared().journal_revision(), 2);
  EXPECT_NE(second.query_ref(), first.query_ref());
  EXPECT_NE(second.prepared().planning_environment_digest(),
            first.prepared().planning_environment_digest());
}

TEST(StateService, OpeningNeedsAnInitialisedStateDirWithACatalog) {
  TempDir temp;
  CTX_EXPECT_THROW(StateService::open(temp.path() / "none"), NotFound, "ctx init");
  init_state_dir(temp.path() / "state");
  CTX_EXPECT_THROW(StateService::open(temp.path() / "state"), NotFound, "ctx catalog import");
  CTX_EXPECT_THROW(StateService::open("relative/state"), InvalidArgument, "absolute");
}

}  // namespace
}  // namespace ctx::runtime
