#include "host/cli/hook_command.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <optional>

#include "host/cli/command_options.hpp"
#include "host/app/hook/hook_protocol.hpp"
#include "host/app/hook/hook_runner.hpp"
#include "host/server/autostart.hpp"
#include "host/server/client.hpp"

namespace ctx::cli {
namespace {

namespace hooks = runtime::hooks;

// How long `ctx hook` waits for a running server (its own per-request deadline is 30 s).
constexpr std::chrono::milliseconds kServerDeadline{35'000};

// Reads at most kMaxHookPayloadBytes + 1 bytes (enough to tell "too large"), then drains the
// rest (up to 64 MiB) so the host's writer is not cut off.
std::string read_payload(std::istream& in) {
  constexpr std::size_t kKeep = hooks::kMaxHookPayloadBytes + 1;
  constexpr std::size_t kDrain = std::size_t{64} << 20;
  std::string payload;
  char buffer[65536];
  std::size_t total = 0;
  while (in && total < kDrain) {
    in.read(buffer, sizeof buffer);
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    if (payload.size() < kKeep) payload.append(buffer, std::min(n, kKeep - payload.size()));
    total += n;
  }
  return payload;
}

}  // namespace

bool autoserve_enabled(const HookOptions& options, const Environment& env) {
  if (options.no_autoserve || !env.executable) return false;
  if (!env.autoserve) return true;
  std::string value = *env.autoserve;
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value != "0" && value != "off" && value != "no" && value != "false";
}

std::chrono::seconds autoserve_idle(const Environment& env) {
  if (env.autoserve_idle) {
    const std::string& text = *env.autoserve_idle;
    if (!text.empty() && text.size() <= 6 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const long seconds = std::stol(text);
      if (seconds >= 1 && seconds <= 604800) return std::chrono::seconds(seconds);
    }
  }
  return server::kDefaultAutoServeIdle;
}

std::string hook_usage() {
  return "  ctx hook ADAPTER [--state DIR] [--no-autoserve]\n"
         "      read a coding host's hook payload on stdin and write its reply on stdout\n"
         "      (ADAPTER: a pinned host adapter: claude-code, codex, generic). Exit 0 with a\n"
         "      reply or nothing, 1 with one stderr line for a bad payload; never 2. Through\n"
         "      the state dir's ctx serve; with none running, in process, and then it starts\n"
         "      one (exits after 30 min without a connection) unless --no-autoserve or\n"
         "      CTX_AUTOSERVE=0\n";
}

int run_hook(const HookOptions& options, const CommandIo& io) {
  // A host that stops reading must not kill ctx with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const std::filesystem::path state = command_state_dir(options.state, io.env);
    hooks::HookRequest request{options.adapter, read_payload(io.in)};
    hooks::check_hook_payload(request.payload);
    // A running `ctx serve` for this state dir serves the hook; else it runs in process.
    std::optional<hooks::HookResponse> response;
    bool in_process = false;
    if (const auto result = server::call_running_server(
            state, hooks::kHookMethod, hooks::hook_request_to_json(request), kServerDeadline)) {
      response = hooks::hook_response_from_json(*result);
    } else {
      hooks::HookRunner runner(state, nullptr, hooks::ExactRetries::kForget);
      response = runner.run(request);
      in_process = true;
    }
    if (response->reply) io.out << *response->reply << "\n";
    io.out.flush();
    // The reply is out; the server for the next hooks starts after it (a few hundred
    // microseconds: a fork, and a wait for the intermediate child only). Whether it started
    // changes nothing in this hook's answer or exit code.
    if (in_process && autoserve_enabled(options, io.env)) {
      server::start_server_detached(state, *io.env.executable, autoserve_idle(io.env));
    }
    return kExitOk;
  } catch (const std::exception& e) {
    io.err << "ctx hook: " << single_line_text(e.what()) << "\n";
  } catch (...) {
    io.err << "ctx hook: unknown failure\n";
  }
  return kExitFailure;
}

}  // namespace ctx::cli
