// The private state directory of one installation: `init_state_dir` creates it (0700) and its
// 32-byte installation key file `installation.key` (0600, random bytes from OpenSSL), and is
// idempotent; `read_installation_key` reads the key back, refusing anything but a private
// 32-byte regular file. Thread-safe (no shared state); concurrent inits converge on one key.
#ifndef CTX_HOST_APP_STATE_LAYOUT_HPP_
#define CTX_HOST_APP_STATE_LAYOUT_HPP_

#include <filesystem>
#include <string>

namespace ctx::runtime {

inline constexpr std::size_t kInstallationKeyBytes = 32;
inline constexpr const char* kInstallationKeyFile = "installation.key";

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
