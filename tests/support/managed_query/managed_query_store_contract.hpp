// The engine::ManagedQueryStore contract as a typed GoogleTest suite: what the service and the
// catalog input authority rely on (registration idempotence and conflicts, mark_planned, the
// scope-and-plan lookup, inputs, desired-set reserve / commit / load / pending, stream
// continuity, retirement at capacity, verify). Instantiate it with a factory type providing
// `static std::shared_ptr<engine::ManagedQueryStore> make(const std::filesystem::path& dir)`;
// every implementation (store::SqliteManagedQueryStore, testing::MemManagedQueryStore) must pass
// it. Tamper detection and reopening are the SQLite store's own tests.
#ifndef CTX_TESTS_SUPPORT_MANAGED_QUERY_MANAGED_QUERY_STORE_CONTRACT_HPP_
#define CTX_TESTS_SUPPORT_MANAGED_QUERY_MANAGED_QUERY_STORE_CONTRACT_HPP_

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "host/core/time.hpp"
#include "host/engine/managed_query_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::testing::managed_query {

using engine::ManagedDesiredSetRecord;
using engine::ManagedQueryRecord;
using service::digest;
using service::replace_event;

template <typename Factory>
class ManagedQueryStoreContractTest : public ::testing::Test {
 protected:
  engine::ManagedQueryStore& store() {
    if (!store_) store_ = Factory::make(dir_.path() / "contract");
    return *store_;
  }
  const engine::EngineEvent& started() const { return setup_.managed_input->session_started(); }
  const engine::EngineEvent& decision() const { return setup_.managed_input->decision_event(); }
  const std::string& manifest() const { return setup_.artifact->manifest_digest(); }
  const std::string& environment() const { return setup_.artifact->planning_environment_digest(); }
  ManagedQueryRecord register_owner(const std::string& name = "owner") {
    return store().register_query(digest(name), started(), decision(), manifest(), environment());
  }
  // The seed decision under another event id: the same scope and plan, other content.
  engine::EngineEvent other_decision() const {
    return replace_event(decision(),
                         [](engine::EngineEvent::Fields& e) { e.event_id += "-other"; });
  }
  ManagedQueryRecord planned_owner() {
    const auto owner = register_owner();
    return store().mark_planned(owner.query_ref(), "plan-initial", digest("d"), 2, digest("r"));
  }
  // A ReassessmentRequested of `parent` at `revision` caused by `causation`, desiring one
  // loadable capability `capability`.
  static engine::EngineEvent desired_event(const ManagedQueryRecord& parent, std::int64_t revision,
                                           const std::string& causation,
                                           const std::string& capability = "skill:alpha") {
    const core::Json row = {{"actionability", "load"},
                            {"capability_id", capability},
                            {"install_descriptor_digest", nullptr},
                            {"install_plan_digest", nullptr},
                            {"kind", "skill"},
                            {"lease_id", "lease-" + std::to_string(revision)},
                            {"source_digest", digest("source")}};
    return replace_event(parent.decision_event(), [&](engine::EngineEvent::Fields& e) {
      e.event_id = "desired-" + std::to_string(revision) + "-" + capability;
      e.kind = "ReassessmentRequested";
      e.expected_revision = revision;
      e.causation_id = causation;
      e.payload = {{"desired_capabilities", core::Json::array({row})},
                   {"owner_id", "owner-1"},
                   {"policy_snapshot_digest", digest("policy")}};
    });
  }

  // Registrations of distinct sessions: session `n` has its own scope, event ids and plan id, and
  // its decision was made `n` seconds after 2030-01-01 (the retirement order).
  ManagedQueryRecord register_session(
      int n, const engine::ManagedQueryStore::RetirementCheck& check = {}) {
    const std::string suffix = "-capacity-" + std::to_string(n);
    const auto& s = started().scope();
    const auto scope = engine::ScopeRef::create(s.tenant_id(), s.workspace_id(), s.repository_id(),
                                                s.session_id() + suffix, s.exposure_id(),
                                                s.host_context_id(), s.parent_exposure_id());
    const std::string at = core::format_rfc3339(core::Timestamp{
        core::parse_rfc3339("2030-01-01T00:00:00Z").micros + std::int64_t{n} * 1'000'000});
    const std::string plan = "plan-capacity-" + std::to_string(n);
    auto session = replace_event(started(), [&](engine::EngineEvent::Fields& e) {
      e.scope = scope;
      e.event_id += suffix;
      e.correlation_id = plan;
      e.occurred_at = at;
    });
    auto intent = replace_event(decision(), [&](engine::EngineEvent::Fields& e) {
      e.scope = scope;
      e.event_id += suffix;
      e.correlation_id = plan;
      e.causation_id = session.event_id();
      e.occurred_at = at;
    });
    return store().register_query(digest("capacity-" + std::to_string(n)), session, intent,
                                  manifest(), environment(), check);
  }

  TempDir dir_;
  service::ServiceSetup setup_ = service::make_setup(dir_.path());
  std::shared_ptr<engine::ManagedQueryStore> store_;
};

TYPED_TEST_SUITE_P(ManagedQueryStoreContractTest);

TYPED_TEST_P(ManagedQueryStoreContractTest, RegistrationIsIdempotentAndLoadable) {
  const auto record = this->register_owner();
  EXPECT_TRUE(engine::is_query_ref(record.query_ref()));
  EXPECT_FALSE(record.planned());
  EXPECT_EQ(record.logical_query_id(), digest("owner"));
  EXPECT_EQ(record.session_started(), this->started());
  EXPECT_EQ(record.decision_event(), this->decision());
  EXPECT_EQ(record.artifact_manifest_digest(), this->manifest());
  EXPECT_EQ(record.planning_environment_digest(), this->environment());
  EXPECT_EQ(this->register_owner().query_ref(), record.query_ref());
  const auto loaded = this->store().load(record.query_ref());
  EXPECT_EQ(loaded.logical_query_id(), digest("owner"));
  EXPECT_EQ(loaded.decision_event(), this->decision());
  std::ostringstream printed;
  printed << loaded;
  EXPECT_EQ(printed.str(),
            "ManagedQueryRecord(query_ref='" + record.query_ref() + "', registered)");
  EXPECT_NO_THROW(this->store().verify());
}

TYPED_TEST_P(ManagedQueryStoreContractTest, RegistrationConflictsAreTyped) {
  this->register_owner();
  auto& store = this->store();
  const auto other = this->other_decision();
  CTX_EXPECT_THROW(store.register_query(digest("owner"), this->started(), other, this->manifest(),
                                        this->environment()),
                   engine::ManagedQueryStoreConflict, "different content");
  CTX_EXPECT_THROW(store.register_query(digest("intruder"), this->started(), other,
                                        this->manifest(), this->environment()),
                   engine::ManagedQueryStoreConflict, "scope and plan");
  CTX_EXPECT_THROW(store.register_query("not-a-digest", this->started(), this->decision(),
                                        this->manifest(), this->environment()),
                   InvalidArgument, "SHA-256");
  CTX_EXPECT_THROW(store.register_query(digest("owner"), this->decision(), this->decision(),
                                        this->manifest(), this->environment()),
                   InvalidArgument, "managing SessionStarted at 0");
  CTX_EXPECT_THROW(store.load("mqr_" + std::string(64, 'f')), engine::ManagedQueryStoreNotFound,
                   "managed query record is unavailable");
  CTX_EXPECT_THROW(store.load("../queries.sqlite3"), InvalidArgument,
                   "opaque managed-query reference");
}

TYPED_TEST_P(ManagedQueryStoreContractTest, MarkPlannedIsIdempotentAndBindsTheScopeAndPlan) {
  const auto owner = this->register_owner();
  auto& store = this->store();
  CTX_EXPECT_THROW(store.mark_planned(owner.query_ref(), "plan-other", digest("d"), 2, digest("r")),
                   engine::ManagedQueryStoreConflict, "does not match its decision");
  CTX_EXPECT_THROW(
      store.mark_planned(owner.query_ref(), "plan-initial", digest("d"), 3, digest("r")),
      engine::ManagedQueryStoreConflict, "does not match its decision");
  CTX_EXPECT_THROW(store.mark_planned(owner.query_ref(), "plan-initial", "x", 2, digest("r")),
                   InvalidArgument, "decision_digest must be a lowercase SHA-256 digest");
  CTX_EXPECT_THROW(store.mark_planned("mqr_" + std::string(64, 'e'), "plan-initial", digest("d"), 2,
                                      digest("r")),
                   engine::ManagedQueryStoreNotFound, "unavailable");
  EXPECT_FALSE(store.find_planned_by_scope_and_plan(owner.decision_event().scope(), "plan-initial")
                   .has_value());
  const auto planned =
      store.mark_planned(owner.query_ref(), "plan-initial", digest("d"), 2, digest("r"));
  EXPECT_TRUE(planned.planned());
  EXPECT_EQ(planned.plan_id(), "plan-initial");
  EXPECT_EQ(planned.decision_digest(), digest("d"));
  EXPECT_EQ(planned.journal_revision(), 2);
  EXPECT_EQ(planned.journal_record_digest(), digest("r"));
  EXPECT_TRUE(store.load(owner.query_ref()).planned());
  EXPECT_EQ(store.mark_planned(owner.query_ref(), "plan-initial", digest("d"), 2, digest("r"))
                .journal_record_digest(),
            digest("r"));
  CTX_EXPECT_THROW(
      store.mark_planned(owner.query_ref(), "plan-initial", digest("e"), 2, digest("r")),
      engine::ManagedQueryStoreConflict, "already bound differently");
  // Registering the identical content again returns the planned record.
  EXPECT_TRUE(this->register_owner().planned());
  const auto found =
      store.find_planned_by_scope_and_plan(owner.decision_event().scope(), "plan-initial");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->query_ref(), owner.query_ref());
  EXPECT_FALSE(store.find_planned_by_scope_and_plan(owner.decision_event().scope(), "plan-other")
                   .has_value());
  CTX_EXPECT_THROW(store.register_query(digest("intruder"), this->started(), this->other_decision(),
                                        this->manifest(), this->environment()),
                   engine::ManagedQueryStoreConflict, "scope and plan are already reserved");
  EXPECT_NO_THROW(store.verify());
}

TYPED_TEST_P(ManagedQueryStoreContractTest, InputsAreStoredOnce) {
  auto& store = this->store();
  const std::string plan = "plan-0123456789abcdef";
  const std::string input = R"({"schema":"ctx.managed-input-v1","x":1})";
  EXPECT_FALSE(store.find_input(plan).has_value());
  store.put_input(plan, input);
  store.put_input(plan, input);
  EXPECT_EQ(store.find_input(plan), input);
  CTX_EXPECT_THROW(store.put_input(plan, input + " "), engine::ManagedQueryStoreCorruption,
                   "differs from the stored one");
  CTX_EXPECT_THROW(store.put_input("not a token!", input), InvalidArgument, "opaque token");
  CTX_EXPECT_THROW(store.find_input("not a token!"), InvalidArgument, "opaque token");
  CTX_EXPECT_THROW(store.put_input("plan-big", std::string(64 * 1024 + 1, 'x')),
                   engine::ManagedQueryStoreCapacityExceeded, "too large");
  CTX_EXPECT_THROW(store.put_input("plan-empty", ""), engine::ManagedQueryStoreCapacityExceeded,
                   "too large");
  EXPECT_FALSE(store.find_input("plan-big").has_value());
  EXPECT_EQ(store.find_input(plan), input);
}

TYPED_TEST_P(ManagedQueryStoreContractTest, DesiredSetIsReservedCommittedAndLoaded) {
  auto& store = this->store();
  const auto registered = this->register_owner();
  const auto unplanned_event = this->desired_event(registered, 2, this->decision().event_id());
  CTX_EXPECT_THROW(store.reserve_desired_set(registered.query_ref(), digest("choice-1"),
                                             {"skill:alpha"}, unplanned_event),
                   engine::ManagedQueryStoreConflict, "requires a planned parent query");
  const auto parent =
      store.mark_planned(registered.query_ref(), "plan-initial", digest("d"), 2, digest("r"));
  EXPECT_FALSE(store.find_latest_desired_set(parent.query_ref()).has_value());
  CTX_EXPECT_THROW(store.load_latest_desired_set(parent.query_ref()),
                   engine::ManagedQueryStoreNotFound, "unavailable");
  const auto event = this->desired_event(parent, 2, this->decision().event_id());
  CTX_EXPECT_THROW(
      store.reserve_desired_set(parent.query_ref(), digest("choice-1"), {"skill:beta"}, event),
      engine::ManagedQueryStoreConflict, "does not match its capability");
  CTX_EXPECT_THROW(store.reserve_desired_set(parent.query_ref(), "choice", {"skill:alpha"}, event),
                   InvalidArgument, "logical_choice_id");
  const auto reserved =
      store.reserve_desired_set(parent.query_ref(), digest("choice-1"), {"skill:alpha"}, event);
  EXPECT_TRUE(engine::is_desired_set_ref(reserved.desired_set_ref()));
  EXPECT_FALSE(reserved.committed());
  EXPECT_EQ(reserved.query_ref(), parent.query_ref());
  EXPECT_EQ(reserved.plan_id(), "plan-initial");
  EXPECT_EQ(reserved.decision_digest(), digest("d"));
  EXPECT_EQ(reserved.stream_identity_digest(),
            engine::desired_stream_identity_digest(event.scope()));
  EXPECT_EQ(reserved.capability_ids(), std::vector<std::string>{"skill:alpha"});
  EXPECT_EQ(reserved.event(), event);
  EXPECT_EQ(
      store.reserve_desired_set(parent.query_ref(), digest("choice-1"), {"skill:alpha"}, event)
          .desired_set_ref(),
      reserved.desired_set_ref());
  const auto other = this->desired_event(parent, 2, this->decision().event_id(), "skill:beta");
  CTX_EXPECT_THROW(
      store.reserve_desired_set(parent.query_ref(), digest("choice-1"), {"skill:beta"}, other),
      engine::ManagedQueryStoreConflict, "already bound to different content");
  CTX_EXPECT_THROW(
      store.reserve_desired_set(parent.query_ref(), digest("choice-2"), {"skill:beta"}, other),
      engine::ManagedQueryStoreConflict, "stream revision is already reserved");
  const auto later = this->desired_event(parent, 3, event.event_id(), "skill:beta");
  CTX_EXPECT_THROW(
      store.reserve_desired_set(parent.query_ref(), digest("choice-2"), {"skill:beta"}, later),
      engine::ManagedQueryStoreConflict, "stream has a pending reservation");
  EXPECT_EQ(store.find_pending_desired_set(event.scope())->desired_set_ref(),
            reserved.desired_set_ref());
  EXPECT_EQ(store.load_pending_desired_set(event.scope()).desired_set_ref(),
            reserved.desired_set_ref());

  const auto& ref = reserved.desired_set_ref();
  CTX_EXPECT_THROW(store.mark_desired_set_committed(ref, 4, digest("jr"), digest("t")),
                   engine::ManagedQueryStoreConflict, "commit revision does not match");
  const auto committed = store.mark_desired_set_committed(ref, 3, digest("jr"), digest("t"));
  EXPECT_TRUE(committed.committed());
  EXPECT_EQ(committed.journal_revision(), 3);
  EXPECT_EQ(committed.journal_record_digest(), digest("jr"));
  EXPECT_EQ(committed.transition_digest(), digest("t"));
  EXPECT_TRUE(store.mark_desired_set_committed(ref, 3, digest("jr"), digest("t")).committed());
  CTX_EXPECT_THROW(store.mark_desired_set_committed(ref, 3, digest("jr"), digest("u")),
                   engine::ManagedQueryStoreConflict, "already bound differently");
  CTX_EXPECT_THROW(
      store.mark_desired_set_committed("mds_" + std::string(64, 'a'), 3, digest("jr"), digest("t")),
      engine::ManagedQueryStoreNotFound, "managed desired set is unavailable");
  CTX_EXPECT_THROW(store.load_desired_set("mqr_" + std::string(64, 'a')), InvalidArgument,
                   "opaque managed desired-set reference");
  EXPECT_FALSE(store.find_pending_desired_set(event.scope()).has_value());
  CTX_EXPECT_THROW(store.load_pending_desired_set(event.scope()), engine::ManagedQueryStoreNotFound,
                   "no pending reservation");
  EXPECT_TRUE(store.load_desired_set(ref).committed());
  EXPECT_EQ(store.load_latest_desired_set(parent.query_ref()).desired_set_ref(), ref);
  std::ostringstream printed;
  printed << store.load_desired_set(ref);
  EXPECT_EQ(printed.str(), "ManagedDesiredSetRecord(desired_set_ref='" + ref + "', committed)");
  EXPECT_NO_THROW(store.verify());
}

// The next desired set continues the stream: caused by the newest desired event of its query and
// not before a committed one; the latest is the highest revision.
TYPED_TEST_P(ManagedQueryStoreContractTest, DesiredSetsContinueTheirStream) {
  auto& store = this->store();
  const auto parent = this->planned_owner();
  const auto first = this->desired_event(parent, 2, this->decision().event_id());
  const auto reserved =
      store.reserve_desired_set(parent.query_ref(), digest("choice-1"), {"skill:alpha"}, first);
  store.mark_desired_set_committed(reserved.desired_set_ref(), 3, digest("jr"), digest("t"));
  const auto uncaused = this->desired_event(parent, 3, this->decision().event_id(), "skill:beta");
  CTX_EXPECT_THROW(
      store.reserve_desired_set(parent.query_ref(), digest("choice-2"), {"skill:beta"}, uncaused),
      engine::ManagedQueryStoreConflict, "does not follow its predecessor");
  const auto stale = this->desired_event(parent, 2, first.event_id(), "skill:beta");
  CTX_EXPECT_THROW(
      store.reserve_desired_set(parent.query_ref(), digest("choice-2"), {"skill:beta"}, stale),
      engine::ManagedQueryStoreConflict, "stream revision is already reserved");
  const auto next = this->desired_event(parent, 3, first.event_id(), "skill:beta");
  const auto second =
      store.reserve_desired_set(parent.query_ref(), digest("choice-2"), {"skill:beta"}, next);
  EXPECT_EQ(store.load_latest_desired_set(parent.query_ref()).desired_set_ref(),
            second.desired_set_ref());
  EXPECT_EQ(store.load_pending_desired_set(next.scope()).desired_set_ref(),
            second.desired_set_ref());
  EXPECT_NO_THROW(store.verify());
}

// At capacity (kMaxQueries) a retirement check makes room: the oldest planned registrations it
// accepts go (kRetirementBatch of them), each with its input; one it refuses stays; without a
// check, or with one that accepts none, the next registration is CapacityExceeded.
TYPED_TEST_P(ManagedQueryStoreContractTest, AtCapacityTheOldestSettledRegistrationsAreRetired) {
  auto& store = this->store();
  const int count = static_cast<int>(engine::ManagedQueryStore::kMaxQueries);
  std::vector<std::string> refs;
  for (int n = 0; n < count; ++n) {
    refs.push_back(this->register_session(n).query_ref());
    const std::string plan = "plan-capacity-" + std::to_string(n);
    store.put_input(plan, "{}");
    store.mark_planned(refs.back(), plan, digest("d"), 2, digest("r"));
  }
  CTX_EXPECT_THROW(this->register_session(count), engine::ManagedQueryStoreCapacityExceeded,
                   "managed query store is full");
  CTX_EXPECT_THROW(this->register_session(count, [](const ManagedQueryRecord&) { return false; }),
                   engine::ManagedQueryStoreCapacityExceeded, "managed query store is full");
  std::vector<std::string> offered;
  const auto record = this->register_session(count, [&](const ManagedQueryRecord& old) {
    EXPECT_TRUE(old.planned());
    offered.push_back(old.query_ref());
    return old.query_ref() != refs[2];
  });
  const int batch = engine::ManagedQueryStore::kRetirementBatch;
  ASSERT_EQ(offered.size(), static_cast<std::size_t>(batch + 1));
  for (int n = 0; n <= batch; ++n) {
    EXPECT_EQ(offered[n], refs[n]) << n;
    const std::string plan = "plan-capacity-" + std::to_string(n);
    if (n == 2) {
      EXPECT_TRUE(store.find_input(plan).has_value());
      continue;
    }
    CTX_EXPECT_THROW(store.load(refs[n]), engine::ManagedQueryStoreNotFound, "unavailable");
    EXPECT_FALSE(store.find_input(plan).has_value()) << n;
  }
  EXPECT_EQ(store.load(record.query_ref()).logical_query_id(),
            digest("capacity-" + std::to_string(count)));
  EXPECT_NO_THROW(store.verify());
  EXPECT_EQ(this->register_session(0).query_ref(), refs[0]);
}

REGISTER_TYPED_TEST_SUITE_P(ManagedQueryStoreContractTest, RegistrationIsIdempotentAndLoadable,
                            RegistrationConflictsAreTyped,
                            MarkPlannedIsIdempotentAndBindsTheScopeAndPlan, InputsAreStoredOnce,
                            DesiredSetIsReservedCommittedAndLoaded, DesiredSetsContinueTheirStream,
                            AtCapacityTheOldestSettledRegistrationsAreRetired);

}  // namespace ctx::testing::managed_query

#endif  // CTX_TESTS_SUPPORT_MANAGED_QUERY_MANAGED_QUERY_STORE_CONTRACT_HPP_
