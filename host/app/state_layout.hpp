// The private state directory of one installation: what is where in it (StatePaths, and the
// names below), `init_state_dir` creates it (0700) and its 32-byte installation key file
// `installation.key` (0600, random bytes from OpenSSL), and is idempotent;
// `read_installation_key` reads the key back, refusing anything but a private 32-byte regular
// file. Thread-safe (no shared state); concurrent inits converge on one key.
//
// This unit is the only code in host/app, host/cli and host/server that names a file or folder
// of the state directory (host/layering.cmake fails the build on a name spelled elsewhere); the
// runtime's own stores name what is inside the folders they are given (catalog/, registry/).
#ifndef CTX_HOST_APP_STATE_LAYOUT_HPP_
#define CTX_HOST_APP_STATE_LAYOUT_HPP_

#include <cstddef>
#include <filesystem>
#include <string>

namespace ctx::runtime {

inline constexpr std::size_t kInstallationKeyBytes = 32;
// Names directly in the state directory.
inline constexpr const char* kInstallationKeyFile = "installation.key";
inline constexpr const char* kPluginLockFile = "plugins.lock.json";  // the pinned plugins
inline constexpr const char* kSocketFile = "ctx.sock";               // ctx serve's socket
inline constexpr const char* kSocketLockFile = "ctx.sock.lock";      // held by the one server
inline constexpr const char* kServeLogFile = "serve.log";            // an autostarted server's
inline constexpr const char* kRegistryDir = "registry";              // pinned catalog artifacts
inline constexpr const char* kServiceDir = "service";                // the stores' databases
// The registry's folder of graph artifact copies (a state watch does not watch it).
inline constexpr const char* kRegistryArtifactsDir = "artifacts";

// Where everything of one state directory is.
struct StatePaths {
  std::filesystem::path state_dir;
  std::filesystem::path plugin_lock;
  std::filesystem::path consent_store;
  std::filesystem::path skills;
  std::filesystem::path activation_targets;
  std::filesystem::path registry;
  std::filesystem::path service_dir;
  std::filesystem::path journal;
  std::filesystem::path audit;
  std::filesystem::path queries;
  std::filesystem::path inputs;
  std::filesystem::path install_policy;
  std::filesystem::path approvals;  // standing install approvals (consent/install_approvals.hpp)
  std::filesystem::path open_lock;  // held while a state service opens the stores
  // The installers' roots and their default activation places (without a host's target).
  std::filesystem::path skills_active;
  std::filesystem::path agents;
  std::filesystem::path agents_active;
  std::filesystem::path mcp_servers;
  std::filesystem::path mcp_active_config;
  std::filesystem::path session_branches;    // one keyed file per base session
  std::filesystem::path activation_holders;  // one folder per activation root and capability
  // The registry's copies: a pinned artifact's manifest and graph, by digest.
  std::filesystem::path registry_manifests;
  std::filesystem::path registry_artifacts;
  std::filesystem::path catalog_current;  // the catalog store's pointer to its current import
  std::filesystem::path socket;
  std::filesystem::path socket_lock;
  std::filesystem::path serve_log;
  // `ctx demo`'s files: its project, its decision key and verifier config.
  std::filesystem::path demo_project;
  std::filesystem::path demo_key;
  std::filesystem::path demo_verifier_config;
  // The layout above for absolute `state_dir`. Errors: InvalidArgument (relative).
  static StatePaths of(const std::filesystem::path& state_dir);
};

struct StateDirInit {
  bool created_dir = false;
  bool created_key = false;
};

// Creates `state_dir` (absolute; parents created 0700 as needed) and the key when missing.
// An existing state dir must be a directory of this user without group/other access.
// Errors: InvalidArgument (relative path), FailedPrecondition (not private, not a directory,
// a symlink, a key of the wrong size or mode), SystemError (I/O, randomness).
StateDirInit init_state_dir(const std::filesystem::path& state_dir);

// The 32 key bytes. Errors: NotFound (no key), FailedPrecondition (wrong size/mode/type).
std::string read_installation_key(const std::filesystem::path& state_dir);

}  // namespace ctx::runtime

#endif  // CTX_HOST_APP_STATE_LAYOUT_HPP_
