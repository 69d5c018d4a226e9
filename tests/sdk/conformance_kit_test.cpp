// The conformance kit's own machinery: supervised children (real forks, real signals, real
// deadlines, real pipes), contained calls, error-buffer checks, argument parsing.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "ctx/conformance/conformance.hpp"
#include "sdk/conformance/src/plugin_under_test.hpp"
#include "sdk/conformance/src/supervisor.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::conformance::detail {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kCall{300};
constexpr milliseconds kKit{5000};

TEST(Supervisor, CleanBodyAnswersWithItsReportsAndFailures) {
  const Supervision s = supervise(
      [] {
        {
          const CallScope scope("create");
        }
        send_report("first");
        ADD_FAILURE() << "a failure inside the child";
        send_report(std::string(1 << 20, 'r'));
      },
      kCall, kKit);
  EXPECT_TRUE(s.answered);
  EXPECT_EQ(s.reason, "");
  EXPECT_TRUE(s.output.empty());
  ASSERT_EQ(s.reports.size(), 2u);
  EXPECT_EQ(s.reports[0], "first");
  EXPECT_EQ(s.reports[1].size(), 1u << 20);
  ASSERT_EQ(s.failures.size(), 1u);
  EXPECT_NE(s.failures[0].message.find("a failure inside the child"), std::string::npos);
  EXPECT_NE(s.failures[0].file.find("conformance_kit_test.cpp"), std::string::npos);
  EXPECT_FALSE(s.clean());
  EXPECT_TRUE(supervise([] {}, kCall, kKit).clean());
}

TEST(Supervisor, ExitBeforeAnsweringNamesTheCall) {
  const Supervision s = supervise(
      [] {
        const CallScope scope("create");
        std::exit(0);
      },
      kCall, kKit);
  EXPECT_FALSE(s.answered);
  EXPECT_EQ(s.reason, "exited with status 0 before answering");
  EXPECT_EQ(s.call, "create");
  ASSERT_EQ(s.problems().size(), 1u);
  EXPECT_EQ(s.problems()[0],
            "the plugin exited with status 0 before answering (during create)");
}

TEST(Supervisor, SignalIsNamed) {
  const Supervision abort = supervise(
      [] {
        const CallScope scope("verify");
        std::abort();
      },
      kCall, kKit);
  EXPECT_EQ(abort.reason, "killed by SIGABRT");
  EXPECT_EQ(abort.call, "verify");
  const Supervision segv = supervise([] { std::raise(SIGSEGV); }, kCall, kKit);
  EXPECT_EQ(segv.reason, "killed by SIGSEGV");
  EXPECT_EQ(segv.call, "");
  EXPECT_EQ(segv.problems()[0], "the plugin was killed by SIGSEGV (between plugin calls)");
}

TEST(Supervisor, CallPastItsDeadlineIsKilled) {
  const auto start = std::chrono::steady_clock::now();
  const Supervision s = supervise(
      [] {
        const CallScope scope("install");
        for (;;) __asm__ volatile("" ::: "memory");
      },
      kCall, kKit);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.reason, "no answer within 0.3 s");
  EXPECT_EQ(s.call, "install");
  EXPECT_EQ(s.problems()[0], "the plugin gave no answer within 0.3 s (during install)");
  EXPECT_GE(took, kCall);
  EXPECT_LT(took, kKit);
}

TEST(Supervisor, EachCallGetsItsOwnDeadline) {
  // Five calls of 150 ms each take longer than one deadline of 300 ms, but none overruns.
  const Supervision s = supervise(
      [] {
        for (int i = 0; i < 5; ++i) {
          const CallScope scope("verify");
          std::this_thread::sleep_for(milliseconds(150));
        }
      },
      kCall, kKit);
  EXPECT_TRUE(s.clean()) << (s.problems().empty() ? "" : s.problems()[0]);
}

TEST(Supervisor, HangBetweenCallsUsesTheKitDeadline) {
  const Supervision s = supervise([] { ::pause(); }, kCall, milliseconds(400));
  EXPECT_EQ(s.reason, "no answer within 0.4 s");
  EXPECT_EQ(s.call, "");
}

TEST(Supervisor, OutputIsAttributedToTheCallThatWroteIt) {
  const Supervision s = supervise(
      [] {
        {
          const CallScope scope("parse_hook");
          std::printf("hello from the plugin\n");  // still in stdio's buffer when the call ends
        }
        std::fprintf(stderr, "late\x01");
        {
          const CallScope scope("render_reply");
          (void)!::write(STDOUT_FILENO, "raw", 3);
        }
      },
      kCall, kKit);
  EXPECT_TRUE(s.answered);
  ASSERT_EQ(s.output.size(), 3u);
  EXPECT_EQ(s.output[0], "wrote to stdout during parse_hook: \"hello from the plugin\\n\"");
  EXPECT_EQ(s.output[1], "wrote to stderr between plugin calls: \"late\\x01\"");
  EXPECT_EQ(s.output[2], "wrote to stdout during render_reply: \"raw\"");
  EXPECT_FALSE(s.clean());
}

TEST(Supervisor, LeftoverProcessesAreKilled) {
  const auto start = std::chrono::steady_clock::now();
  const Supervision s = supervise(
      [] {
        const pid_t grandchild = ::fork();
        if (grandchild == 0) {
          for (;;) ::pause();  // holds the stdout and stderr pipes open
        }
        send_report(std::to_string(grandchild));
      },
      kCall, kKit);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kKit);
  ASSERT_TRUE(s.answered);
  ASSERT_EQ(s.reports.size(), 1u);
  const pid_t grandchild = std::stoi(s.reports[0]);
  // Reparented to init, it dies from the group kill; give init a moment to reap it.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(grandchild, 0) != 0 && errno == ESRCH;
    if (!gone) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived";
}

TEST(Supervisor, ReportsIntoTheCurrentTest) {
  const Supervision s = supervise([] { ADD_FAILURE() << "inner"; }, kCall, kKit);
  ::testing::TestPartResultArray results;
  bool clean = true;
  {
    const ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    clean = report_supervision(s);
  }
  EXPECT_FALSE(clean);
  ASSERT_EQ(results.size(), 1);
  EXPECT_NE(std::string(results.GetTestPartResult(0).message()).find("inner"), std::string::npos);
}

TEST(ConformanceKit, ContainedCallReturnsItsResult) {
  const Contained call = contain([] {
    CallResult r;
    r.code = CTX_NOT_FOUND;
    r.message = std::string("bin\0ary", 7);
    r.verdict = 42;
    return r;
  });
  ASSERT_EQ(call.ending, Contained::Ending::kReturned) << call.describe();
  EXPECT_EQ(call.result.code, CTX_NOT_FOUND);
  EXPECT_EQ(call.result.message, std::string("bin\0ary", 7));
  EXPECT_EQ(call.result.verdict, 42u);
}

TEST(ConformanceKit, ContainedEscapedExceptionIsReported) {
  const Contained call = contain([]() -> CallResult { throw std::runtime_error("escaped"); });
  EXPECT_EQ(call.ending, Contained::Ending::kThrew);
  EXPECT_EQ(call.describe(), "let a C++ exception cross the C ABI");
}

TEST(ConformanceKit, InvokeSeesUntouchedAndUnterminatedErrorBuffers) {
  const CallResult ok = invoke("op", [](ctx_error*) { return CTX_OK; });
  EXPECT_TRUE(ok.error_untouched);
  const CallResult failed = invoke("op", [](ctx_error* err) {
    std::strcpy(err->message, "bad input");
    return CTX_INVALID_ARGUMENT;
  });
  EXPECT_EQ(failed.code, CTX_INVALID_ARGUMENT);
  EXPECT_EQ(failed.message, "bad input");
  EXPECT_TRUE(failed.message_terminated);
  EXPECT_FALSE(failed.error_untouched);
  const CallResult unterminated = invoke("op", [](ctx_error* err) {
    std::memset(err->message, 'a', sizeof err->message);
    return CTX_INVALID_ARGUMENT;
  });
  EXPECT_FALSE(unterminated.message_terminated);
}

TEST(ConformanceKit, InvokeIsACallScope) {
  const Supervision s = supervise(
      [] {
        invoke("destroy", [](ctx_error*) -> ctx_code { std::exit(3); });
      },
      kCall, kKit);
  EXPECT_EQ(s.reason, "exited with status 3 before answering");
  EXPECT_EQ(s.call, "destroy");
}

TEST(ConformanceKit, RefusingSinkReturnsItsCode) {
  Sink sink(CTX_RESOURCE_EXHAUSTED);
  const std::uint8_t byte = 1;
  EXPECT_EQ(sink.get()->write(sink.get()->context, &byte, 1), CTX_RESOURCE_EXHAUSTED);
  EXPECT_EQ(sink.text(), "");
  Sink collecting;
  EXPECT_EQ(collecting.get()->write(collecting.get()->context, &byte, 1), CTX_OK);
  EXPECT_EQ(collecting.text(), std::string(1, '\1'));
}

TEST(ConformanceKit, GarbageInputsCarryTheMarker) {
  int marked = 0;
  for (const std::string& input : garbage_inputs()) {
    marked += input.find(kInputMarker) != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(marked, 3);
}

TEST(ConformanceKit, ParsesItsArguments) {
  char prog[] = "ctx-conformance";
  char plugin[] = "/p/x.so";
  char flag[] = "--config";
  char file[] = "/c/kit.json";
  char timeout[] = "--timeout";
  char seconds[] = "2.5";
  char* argv[] = {prog, plugin, flag, file, timeout, seconds};
  const Options options = parse_arguments(6, argv);
  EXPECT_EQ(options.plugin, "/p/x.so");
  EXPECT_EQ(options.config_file, std::filesystem::path("/c/kit.json"));
  EXPECT_EQ(options.call_timeout, milliseconds(2500));
  EXPECT_EQ(parse_arguments(2, argv).call_timeout, milliseconds(10000));
  char* no_plugin[] = {prog};
  CTX_EXPECT_THROW(parse_arguments(1, no_plugin), InvalidArgument, "name the plugin");
  char* dangling[] = {prog, plugin, flag};
  CTX_EXPECT_THROW(parse_arguments(3, dangling), InvalidArgument, "--config needs a file");
  char extra[] = "--bogus";
  char* unknown[] = {prog, plugin, extra};
  CTX_EXPECT_THROW(parse_arguments(3, unknown), InvalidArgument, "unknown option --bogus");
  for (const char* bad : {"0", "-1", "abc", "1s", "100000"}) {
    std::string text = bad;
    char* bad_timeout[] = {prog, plugin, timeout, text.data()};
    CTX_EXPECT_THROW(parse_arguments(4, bad_timeout), InvalidArgument, "--timeout wants seconds");
  }
}

}  // namespace
}  // namespace ctx::conformance::detail
