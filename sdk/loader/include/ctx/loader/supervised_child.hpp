// Runs a piece of work in a forked child with a deadline, so whatever plugin code it runs
// cannot take the caller down, hang it, or write to its stdout/stderr. The child's fds 1 and 2
// go to a pipe the parent drains; its answer travels on a separate pipe.
// Thread-safety: fork() in a multi-threaded process is only safe if no other thread holds a
// lock the child needs; call it from single-threaded processes (the CLI) or accept that a
// deadlocked child is reported as "no answer".
#ifndef CTX_LOADER_SUPERVISED_CHILD_HPP_
#define CTX_LOADER_SUPERVISED_CHILD_HPP_

#include <chrono>
#include <functional>
#include <string>

namespace ctx::plugins {

// Runs `work` in a child and returns the text it returned. `plugin` names the plugin in
// messages. The child is killed at `deadline`.
// Errors: PluginTrialFailed — "plugin X exited with status N before answering", "plugin X was
// killed by SIGSEGV", "plugin X gave no answer within 10 s", "plugin X wrote to stdout/stderr
// (N bytes: "...")"; when `work` throws, the PluginTrialFailed carries its message unchanged.
// SystemError when pipes or fork fail.
std::string run_supervised(const std::string& plugin, std::chrono::milliseconds deadline,
                           const std::function<std::string()>& work);

}  // namespace ctx::plugins

#endif  // CTX_LOADER_SUPERVISED_CHILD_HPP_
