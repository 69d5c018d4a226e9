// ctx plugin conformance kit: loads a plugin shared object exactly as the host does (pinned in a
// temporary lock, copied into a private content-addressed cache, digest-checked, negotiated) and
// registers GoogleTest suites for it: the generic ABI suite plus the suite of the plugin's kind.
//
// Use it through the `ctx-conformance PLUGIN.so [--config FILE]` runner, or link ctx::conformance
// into your own test binary:
//   int main(int argc, char** argv) { return ctx::conformance::run_main(argc, argv); }
// or, with your own main: InitGoogleTest, then `auto session = register_suites(options);`, then
// RUN_ALL_TESTS() while `session` lives.
//
// Kit config file (--config, JSON object; every member optional):
//   "plugin_config": <object>  passed to the plugin's create() as JSON text. Every string equal to
//                    or containing "@TEMP_DIR@" gets a fresh empty directory per instance.
//   "verifier":      {"vector": {"assertion": <object>, "signing_bytes": "<utf-8 text>"}}
//                    a proof the configured key accepts; enables the acceptance test, and its
//                    "proof" strings are mutated to build wrong proofs.
//   "host_adapter":  {"hook_payload": <object>}  replaces the built-in sample hook payload.
//
// Installer request contract (what the installer suite sends and expects; ctx's runtime uses the
// same fields):
//   target_identity -> {"device","inode","owner","mode": unsigned integers, "path": string}
//   install  {"capability_id", "content" (utf-8) | "content_base64", "content_sha256"}
//         -> {"outcome": "applied"|"failed"|"indeterminate", "observed_material_identity_digest",
//             "verification_digest" (when applied), ...}; a digest mismatch is never "applied"
//   activate {"capability_id", "content_sha256"} -> {"outcome", and when applied
//             "observed_material_identity_digest", "verification_digest", ...}
//   deactivate {"capability_id"} -> {"outcome", ...}
//   reconcile {"capabilities": [{"capability_id", "content_sha256"}]}
//         -> {"capabilities": [{"capability_id", "installed": bool, "active": bool, and when
//             active "active_material_identity_digest", "verification_digest", ...}]}
//   Every material identity digest is the MaterialIdentity digest stated in plugin_abi.h.
//
// Calls that are meant to misbehave (garbage input, refusing sinks) run in a forked child, so a
// crashing plugin fails its test instead of the runner. Not thread-safe.
#ifndef CTX_CONFORMANCE_CONFORMANCE_HPP_
#define CTX_CONFORMANCE_CONFORMANCE_HPP_

#include <filesystem>
#include <memory>
#include <optional>

namespace ctx::conformance {

struct Options {
  std::filesystem::path plugin;                      // the shared object under test
  std::optional<std::filesystem::path> config_file;  // kit config, see above
};

// Parses "PLUGIN.so [--config FILE]" (gtest flags already removed by InitGoogleTest).
// Errors: ctx::InvalidArgument naming the problem.
Options parse_arguments(int argc, char** argv);

// Owns the kit's temporary directories (state, sandbox, instance roots); removes them when
// destroyed. Keep it alive until RUN_ALL_TESTS returns. Move-only.
class Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

 private:
  friend Session register_suites(const Options& options);
  struct State;
  explicit Session(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// Pins and loads options.plugin through ctx's loader, then registers the ABI suite and the suite
// of its kind. A plugin that cannot be loaded (or a config that cannot be read) registers one
// failing test that says why, so the run fails. Call after InitGoogleTest.
Session register_suites(const Options& options);

// InitGoogleTest, parse_arguments, register_suites, RUN_ALL_TESTS. Returns the process exit code:
// 0 when every test passed, 1 when any failed, 2 for a usage error.
int run_main(int argc, char** argv);

}  // namespace ctx::conformance

#endif  // CTX_CONFORMANCE_CONFORMANCE_HPP_
