// `ctx demo [--state DIR] [--catalog DIR]`: the main job on one state directory, one output line
// per step saying what it did, each step the real command (nothing is simulated):
//   1. ctx init (state dir, installation key, bundled plugins pinned)
//   2. ctx catalog import DIR (default: examples/catalog of this checkout)
//   3. a demo Ed25519 decision key, <state>/demo/decision-key.pem (0600), made once
//   4. ctx consent trust of that key (verifier ed25519) for the local audience
//   5. a real Claude Code UserPromptSubmit payload through ctx hook claude-code (through a
//      running ctx serve of the state dir when there is one) and the host's reply; the
//      skills of the state dir activate in <state>/demo-project/.claude/skills (where the
//      pinned claude-code adapter's install_locations says project skills live)
//   6. the plan ctx hook committed and the choice of its installable skill (set_desired):
//      consent-required with a challenge
//   7. ctx consent show
//   8. ctx consent approve CHALLENGE --key <demo key>: signed, resolved, installed and
//      activated: <state>/demo-project/.claude/skills/<name>/SKILL.md
//   9. the Claude Code adapter's SessionStart reply after an install (reloadSkills)
// A second run on the same state dir succeeds too (every step is idempotent). The demo key sits
// in the state dir only because it is a demo: a real decision key must live where the coding
// agent cannot use it (README). Exit codes: 0 done, 1 a step failed (its error on stderr), 2 usage.
#ifndef CTX_HOST_CLI_DEMO_COMMAND_HPP_
#define CTX_HOST_CLI_DEMO_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>

#include "host/cli/command_options.hpp"

namespace ctx::cli {

inline constexpr const char* kDemoAudience = "ctx-local";  // runtime::kStateConsentAudience
inline constexpr const char* kDemoAuthenticator = "demo-key";

struct DemoOptions {
  std::optional<std::filesystem::path> state;
  std::optional<std::filesystem::path> catalog;  // default: examples/catalog
};

// Each step runs its ctx command line through cli::run (its errors go to io.err and end the
// demo with that step's exit code). Errors: what the steps between the commands throw.
int run_demo(const DemoOptions& options, const CommandIo& io);

std::string demo_usage();

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_DEMO_COMMAND_HPP_
