// The managed query service across real processes: two processes preparing the same query on
// the same files converge on one plan, and a process killed (SIGKILL) between the journal
// commit and the store mark of a desired choice leaves work another process finishes exactly
// once. Each child opens its own store, registry instance and service on the parent's files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/runtime/crash_point.hpp"
#include "host/runtime/service/managed_service.hpp"
#include "host/runtime/service/service_crash_points.hpp"
#include "tests/support/runtime/managed_service_seed_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::TempDir;
using namespace ::ctx::testing::service;  // NOLINT(google-build-using-namespace)

// A service of this process on `setup`'s files: its own store connection, registry instance
// (same root), artifact handle and ports.
std::shared_ptr<ManagedQueryService> open_process_service(const ServiceSetup& setup) {
  auto registry = open_managed_artifact_registry(setup.tmp / "registry");
  auto artifact = registry->reopen(setup.artifact->manifest_digest(),
                                   setup.artifact->planning_environment_digest());
  auto [started, intent] = seed_events(*artifact);
  auto inputs = std::make_shared<InputAuthority>();
  inputs->set("work-one", ManagedQueryInput::create(artifact, started, intent));
  ManagedQueryServiceOptions options = setup.service_options();
  options.registry = registry;
  options.query_store = store::open_managed_query_store(setup.store_path, store_key());
  options.benefit_facts_port = std::make_shared<Facts>();
  options.material_port = std::make_shared<::ctx::testing::service::MaterialPort>();
  options.install_bundle_port = std::make_shared<InstallPort>();
  options.input_authority = inputs;
  options.trusted_clock = std::make_shared<FixedClock>(kNow);
  return open_managed_query_service(std::move(options));
}

// One forked child running `body` once the parent starts it; `body`'s text comes back on a pipe.
struct Child {
  pid_t pid = -1;
  int out = -1;  // the child's report
  int go = -1;   // one byte starts the child

  void start() {
    [[maybe_unused]] auto sent = ::write(go, "g", 1);
    ::close(go);
    go = -1;
  }
  // Reads the report and reaps the child; `status` is its wait status.
  std::string finish(int* status) {
    std::string text;
    char buffer[512];
    for (ssize_t n; (n = ::read(out, buffer, sizeof(buffer))) > 0;) {
      text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(out);
    ::waitpid(pid, status, 0);
    return text;
  }
};

template <typename Body>
Child fork_child(Body body) {
  int out[2];
  int go[2];
  if (::pipe(out) != 0 || ::pipe(go) != 0) throw std::runtime_error("pipe failed");
  Child child;
  child.pid = ::fork();
  if (child.pid < 0) throw std::runtime_error("fork failed");
  if (child.pid == 0) {
    ::close(out[0]);
    ::close(go[1]);
    char byte = 0;
    [[maybe_unused]] auto got = ::read(go[0], &byte, 1);
    std::string text;
    try {
      text = body();
    } catch (const std::exception& error) {
      text = std::string("error: ") + error.what();
    }
    [[maybe_unused]] auto written = ::write(out[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(out[1]);
  ::close(go[0]);
  child.out = out[0];
  child.go = go[1];
  return child;
}

TEST(ManagedServiceProcesses, TwoProcessesPreparingOneQueryConvergeOnOnePlan) {
  TempDir tmp;
  auto setup = make_setup(tmp.path());
  const auto request = ManagedQueryRequest::create(digest("two-process-query"), "work-one");
  auto child = fork_child([&] {
    auto service = open_process_service(setup);
    const auto result =
        service->prepare(ManagedQueryRequest::create(digest("two-process-query"), "work-one"));
    return result.query_ref() + " " + result.prepared().decision_digest();
  });
  child.start();  // both processes prepare at once
  const auto mine = setup.service->prepare(request);
  int status = 0;
  const auto theirs = child.finish(&status);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(theirs, mine.query_ref() + " " + mine.prepared().decision_digest());
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 2);
  EXPECT_EQ(sqlite_count(setup.store_path, "managed_queries"), 1);
  EXPECT_TRUE(setup.store->load(mine.query_ref()).planned());
}

TEST(ManagedServiceProcesses, DesiredChoiceOfAKilledProcessIsFinishedOnceByAnother) {
  TempDir tmp;
  auto setup = make_setup(tmp.path(), {.requested_limit = 1});
  const auto prepared = setup.service->prepare(
      ManagedQueryRequest::create(digest("killed-desired-query"), "work-one"));
  const auto query_ref = prepared.query_ref();
  auto child = fork_child([&]() -> std::string {
    auto service = open_process_service(setup);
    CrashPointArmed armed{std::string(service_crash_points::kAfterDesiredCommit)};
    try {
      service->set_desired(
          ManagedDesiredSetRequest::create(query_ref, digest("killed-desired-choice"), {}));
    } catch (const SimulatedCrash&) {
      ::raise(SIGKILL);  // the process dies at the crash point: no result, no mark
    }
    return "not killed";
  });
  child.start();
  int status = 0;
  const auto text = child.finish(&status);
  ASSERT_TRUE(WIFSIGNALED(status)) << text;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  const auto pending = setup.store->load_pending_desired_set(seed_scope());
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 3);
  const auto recovered = setup.service->set_desired(
      ManagedDesiredSetRequest::create(query_ref, digest("killed-desired-choice"), {}));
  EXPECT_EQ(recovered.desired_set_ref(), pending.desired_set_ref());
  EXPECT_EQ(recovered.journal_revision(), 3);
  EXPECT_EQ(recovered.status(), ManagedDesiredStatus::kReconciled);
  EXPECT_EQ(sqlite_count(setup.journal_path, "engine_journal"), 3);
  EXPECT_TRUE(setup.store->load_desired_set(pending.desired_set_ref()).committed());
}

}  // namespace
}  // namespace ctx::runtime
