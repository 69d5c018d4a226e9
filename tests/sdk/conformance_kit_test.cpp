// The conformance kit's own machinery: contained calls, error-buffer checks, argument parsing.
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <stdexcept>

#include "ctx/conformance/conformance.hpp"
#include "sdk/conformance/src/plugin_under_test.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::conformance::detail {
namespace {

TEST(ConformanceKit, ContainedCallReturnsTheChildsResult) {
  const Contained call = contain([] {
    CallResult r;
    r.code = CTX_NOT_FOUND;
    r.message = std::string("bin\0ary", 7);
    r.output = std::string(1 << 20, 'o');
    r.verdict = 42;
    r.error_untouched = false;
    return r;
  });
  ASSERT_EQ(call.ending, Contained::Ending::kReturned) << call.describe();
  EXPECT_EQ(call.result.code, CTX_NOT_FOUND);
  EXPECT_EQ(call.result.message, std::string("bin\0ary", 7));
  EXPECT_EQ(call.result.output.size(), 1u << 20);
  EXPECT_EQ(call.result.verdict, 42u);
  EXPECT_FALSE(call.result.error_untouched);
}

TEST(ConformanceKit, ContainedCrashIsReportedNotSuffered) {
  const Contained call = contain([]() -> CallResult {
    std::raise(SIGSEGV);
    return {};
  });
  EXPECT_EQ(call.ending, Contained::Ending::kCrashed);
  EXPECT_EQ(call.detail, SIGSEGV);
  EXPECT_EQ(call.describe(), "crashed with signal " + std::to_string(SIGSEGV));
}

TEST(ConformanceKit, ContainedEscapedExceptionIsReported) {
  const Contained call = contain([]() -> CallResult { throw std::runtime_error("escaped"); });
  EXPECT_EQ(call.ending, Contained::Ending::kThrew);
}

TEST(ConformanceKit, InvokeSeesUntouchedAndUnterminatedErrorBuffers) {
  const CallResult ok = invoke([](ctx_error*) { return CTX_OK; });
  EXPECT_TRUE(ok.error_untouched);
  const CallResult failed = invoke([](ctx_error* err) {
    std::strcpy(err->message, "bad input");
    return CTX_INVALID_ARGUMENT;
  });
  EXPECT_EQ(failed.code, CTX_INVALID_ARGUMENT);
  EXPECT_EQ(failed.message, "bad input");
  EXPECT_TRUE(failed.message_terminated);
  EXPECT_FALSE(failed.error_untouched);
  const CallResult unterminated = invoke([](ctx_error* err) {
    std::memset(err->message, 'a', sizeof err->message);
    return CTX_INVALID_ARGUMENT;
  });
  EXPECT_FALSE(unterminated.message_terminated);
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
  char* argv[] = {prog, plugin, flag, file};
  const Options options = parse_arguments(4, argv);
  EXPECT_EQ(options.plugin, "/p/x.so");
  EXPECT_EQ(options.config_file, std::filesystem::path("/c/kit.json"));
  char* no_plugin[] = {prog};
  CTX_EXPECT_THROW(parse_arguments(1, no_plugin), InvalidArgument, "name the plugin");
  char* dangling[] = {prog, plugin, flag};
  CTX_EXPECT_THROW(parse_arguments(3, dangling), InvalidArgument, "--config needs a file");
  char extra[] = "--bogus";
  char* unknown[] = {prog, plugin, extra};
  CTX_EXPECT_THROW(parse_arguments(3, unknown), InvalidArgument, "unknown option --bogus");
}

}  // namespace
}  // namespace ctx::conformance::detail
