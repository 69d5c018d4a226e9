// ctx plugin conformance kit: loads a plugin shared object exactly as the host does (pinned in a
// temporary lock, copied into a sealed memfd, digest- and note-checked, negotiated) and
// registers GoogleTest suites for it: the generic ABI suite plus the suite of the plugin's kind.
//
// Use it through the `ctx-conformance PLUGIN.so [--config FILE] [--timeout SECONDS]` runner, or
// link ctx::conformance
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
//                    "proof" (or wire "proof_base64") strings are changed and truncated to build
//                    wrong proofs. Optional "other_plugin_config": <object>, the plugin's config
//                    for another key, under which the vector must be rejected.
//   "installer":     {"tree_material": false} leaves out the tree-material tests, for an
//                    installer of single-file material only (default true). An installer of
//                    another kind than skills names its material, all three together:
//                    "capability_id": "<kind>:<name>", "material": <its bytes as text>,
//                    "large_material": <a valid material whose "@PADDING@" becomes
//                    "padding_bytes" (default 524288, at least 131072) bytes of 'x'>. An installer
//                    that activates into a file the host reads names it: "host_file": {"path":
//                    "@TEMP_DIR@/...", "content"?: <the user's bytes before activation; absent:
//                    no file>, "conflicting_content": <the user's own entry of the same name>};
//                    the suite then checks that deactivate restores the file's bytes and that the
//                    user's own entry is never overwritten or removed.
//   "host_adapter":  {"hook_payload": <object>}  replaces the built-in sample hook payload.
//
// Installer request contract (what the installer suite sends and expects; ctx's runtime uses the
// same fields):
//   target_identity -> {"device","inode","owner","mode": unsigned integers, "path": string}
//   install  {"capability_id", "content_sha256", one body source: "content" (utf-8) |
//             "content_base64" | "source": {"file": "<abs path>"} | "source": {"directory":
//             "<abs dir of tree material>"} with "manifest": <its manifest text>, optional
//             "content_bytes", "material_identity_digest"}; tree material whose manifest is not
//             the one the authorised root names, or whose files are not the manifest's, is never
//             "applied" and leaves nothing installed
//         -> {"outcome": "applied"|"failed"|"indeterminate", "observed_material_identity_digest",
//             "verification_digest" (when applied), ...}; a content digest, content_bytes or
//             material identity digest that does not match the bytes is never "applied" and
//             leaves nothing installed; installing installed material again is "applied" and
//             rewrites nothing; an install streaming a body polls the host's cancelled() (the
//             kit SIGKILLs a writer at its second poll, then a new instance on the same root
//             must reconcile it not installed, install it, and leave no staging behind)
//   install_from_source (ABI minor 1, optional; tested when the op is offered) install's tree
//             request without "source", the file bodies read from the host's ctx_body_source by
//             manifest path: each listed file read once; an altered byte, a missing file or a
//             file longer than its entry (the installer must refuse the write past the entry's
//             size) is never "applied" and leaves nothing installed; installed material is
//             "applied" again without reading any body
//   activate {"capability_id", "content_sha256"} -> {"outcome", and when applied
//             "observed_material_identity_digest", "verification_digest", ...}
//   deactivate {"capability_id"} -> {"outcome", ...}
//   reconcile {"capabilities": [{"capability_id", "content_sha256"}]}
//         -> {"capabilities": [{"capability_id", "installed": bool, "active": bool, and when
//             active "active_material_identity_digest", "verification_digest"; optional
//             "install_state" / "activation_state": "applied"|"absent"|"indeterminate", ...}]}
//   Every material identity digest is the MaterialIdentity digest stated in plugin_abi.h (for
//   tree material: of its tree root text, "Tree material" there).
//
// Supervision: the kit process never loads the plugin. It pins and loads it in a child process to
// learn its kind, and runs every test in a child of its own (fork per test), where each plugin call
// (entry, create, destroy, every op) has a deadline (--timeout, default 10 s). A child that exits,
// is killed by a signal, overruns a deadline or writes to stdout/stderr fails that test with the
// reason and the call ("the plugin exited with status 0 before answering (during create)",
// "no answer within 10 s", "killed by SIGSEGV", "wrote to stdout during verify: ..."). Without a
// "plugin_config", a plugin whose create refuses the empty configuration fails one test,
// KitConfig.PluginNeedsAConfiguration: "this plugin needs a configuration: pass --config FILE".
// Not thread-safe.
#ifndef CTX_CONFORMANCE_CONFORMANCE_HPP_
#define CTX_CONFORMANCE_CONFORMANCE_HPP_

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

namespace ctx::conformance {

struct Options {
  std::filesystem::path plugin;                      // the shared object under test
  std::optional<std::filesystem::path> config_file;  // kit config, see above
  std::chrono::milliseconds call_timeout{10000};     // deadline of each plugin call
};

// Parses "PLUGIN.so [--config FILE] [--timeout SECONDS]" (gtest flags already removed by
// InitGoogleTest).
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

// Pins and loads options.plugin through ctx's loader in a supervised child, then registers the ABI
// suite and the suite of its kind. A plugin that cannot be loaded (or a config that cannot be
// read), or that needs a configuration it was not given, registers one failing test that says
// why, so the run fails. Call after InitGoogleTest.
Session register_suites(const Options& options);

// InitGoogleTest, parse_arguments, register_suites, RUN_ALL_TESTS. Returns the process exit code:
// 0 when every test passed, 1 when any failed, 2 for a usage error.
int run_main(int argc, char** argv);

}  // namespace ctx::conformance

#endif  // CTX_CONFORMANCE_CONFORMANCE_HPP_
