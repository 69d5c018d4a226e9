// Supervised child processes: the conformance kit runs every plugin call in one.
//
// Why one forked child per test (and not a long-lived child speaking a pipe protocol): the suites
// are ordinary GoogleTest bodies that call the C ABI directly and check codes, error buffers and
// sinks byte by byte. Forking per test lets those bodies run unchanged next to the plugin, inside
// the child, while the parent never maps the plugin at all; a per-call RPC would have to marshal
// every pointer-shaped argument (instances, sinks, error buffers, the entry's descriptor) and could
// no longer observe them. The cost is one fork plus one pinned load per test (milliseconds).
//
// The child runs in its own process group with stdout and stderr on pipes the parent drains; it
// brackets each plugin call with CallScope, so the parent applies the per-call deadline and knows
// which call was running when the child exited, was killed, overran or printed. GoogleTest failures
// inside the child are intercepted and sent to the parent, which reports them in its own test.
// Not thread-safe: one supervision at a time, from the thread that runs the tests.
#ifndef CTX_SDK_CONFORMANCE_SRC_SUPERVISOR_HPP_
#define CTX_SDK_CONFORMANCE_SRC_SUPERVISOR_HPP_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ctx::conformance::detail {

// A GoogleTest failure recorded inside a supervised child.
struct ChildFailure {
  std::string file;  // empty when unknown
  int line = -1;
  std::string message;
};

// What a supervised child did.
struct Supervision {
  bool answered = false;  // the body ran to its end and the child said so
  // Empty, or what went wrong with the process: "exited with status 0 before answering",
  // "no answer within 10 s", "killed by SIGSEGV".
  std::string reason;
  // The plugin call running when `reason` happened ("" when between calls).
  std::string call;
  // Output the child wrote: "wrote to stdout during create: \"hello\"" (one line per stream and
  // call).
  std::vector<std::string> output;
  std::vector<ChildFailure> failures;  // GoogleTest failures inside the child, in order
  std::vector<std::string> reports;    // payloads the body sent with send_report, in order

  // True when nothing went wrong: answered, no output, no failures.
  bool clean() const { return answered && output.empty() && failures.empty(); }
  // One line per problem (failures excluded), each naming the call: "the plugin exited with
  // status 0 before answering (during create)", "the plugin was killed by SIGSEGV (during
  // verify)", "the plugin gave no answer within 10 s (during install)".
  std::vector<std::string> problems() const;
};

// Runs `body` in a forked child and waits for it. While the child is inside a CallScope it must
// leave it within `call_deadline`; between calls it has `kit_deadline`. Past either, its whole
// process group is killed. Errors: ctx::SystemError when pipes or fork fail.
Supervision supervise(const std::function<void()>& body, std::chrono::milliseconds call_deadline,
                      std::chrono::milliseconds kit_deadline);

// Reports a supervision into the running GoogleTest test: each child failure at its file and
// line, then each problem. Returns clean().
bool report_supervision(const Supervision& supervision);

// Marks a plugin call in a supervised child (a no-op outside one): the deadline runs from
// construction to destruction. Flushes stdout and stderr before it ends, so output buffered by
// the call is attributed to it.
class CallScope {
 public:
  explicit CallScope(const std::string& name);
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
};

// Sends `payload` from a supervised child to the parent (Supervision::reports). Outside a
// supervised child it does nothing.
void send_report(const std::string& payload);

}  // namespace ctx::conformance::detail

#endif  // CTX_SDK_CONFORMANCE_SRC_SUPERVISOR_HPP_
