#include "host/app/state_layout.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/core/state_fs.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime {
namespace {

namespace fs = std::filesystem;

void require_private_dir(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw SystemError("state directory cannot be inspected");
  if (S_ISLNK(st.st_mode)) throw FailedPrecondition("state directory must not be a symlink");
  if (!S_ISDIR(st.st_mode)) throw FailedPrecondition("state directory is not a directory");
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw FailedPrecondition("state directory must be private (0700) and owned by this user");
  }
}

std::string read_key_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw NotFound("installation key is missing (run ctx init)");
    throw FailedPrecondition("installation key must be a regular file");
  }
  struct stat st {};
  std::string key(kInstallationKeyBytes, '\0');
  const bool shaped = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                      (st.st_mode & 077) == 0 &&
                      st.st_size == static_cast<off_t>(kInstallationKeyBytes);
  const ssize_t n = shaped ? ::read(fd, key.data(), key.size()) : -1;
  ::close(fd);
  if (!shaped || n != static_cast<ssize_t>(kInstallationKeyBytes)) {
    throw FailedPrecondition("installation key must be a private 32-byte file");
  }
  return key;
}

}  // namespace

StatePaths StatePaths::of(const fs::path& state_dir) {
  if (!state_dir.is_absolute()) throw InvalidArgument("state directory must be an absolute path");
  StatePaths paths;
  paths.state_dir = state_dir.lexically_normal();
  const fs::path& dir = paths.state_dir;
  paths.registry = dir / kRegistryDir;
  paths.service_dir = dir / kServiceDir;
  paths.journal = paths.service_dir / "journal.sqlite3";
  paths.audit = paths.service_dir / "audit.sqlite3";
  paths.queries = paths.service_dir / "queries.sqlite3";
  paths.inputs = paths.service_dir / "inputs";
  paths.install_policy = dir / "install-policy";
  paths.approvals = paths.service_dir / "install-approvals.json";
  paths.plugin_lock = dir / kPluginLockFile;
  paths.consent_store = paths.service_dir / "consent.sqlite3";
  paths.skills = dir / "skills";
  paths.activation_targets = dir / "activation-targets";
  paths.open_lock = paths.service_dir / ".open.lock";
  paths.skills_active = paths.skills / "active";
  paths.agents = dir / "agents";
  paths.agents_active = paths.agents / "active";
  paths.mcp_servers = dir / "mcp-servers";
  paths.mcp_active_config = paths.mcp_servers / "active.json";
  paths.session_branches = dir / "session-branches";
  paths.activation_holders = dir / "activation-holders";
  paths.registry_manifests = paths.registry / "manifests";
  paths.registry_artifacts = paths.registry / kRegistryArtifactsDir;
  paths.catalog_current = dir / "catalog" / "CURRENT";
  paths.socket = dir / kSocketFile;
  paths.socket_lock = dir / kSocketLockFile;
  paths.serve_log = dir / kServeLogFile;
  paths.demo_project = dir / "demo-project";
  paths.demo_key = dir / "demo" / "decision-key.pem";
  paths.demo_verifier_config = dir / "demo" / "verifier-config.json";
  return paths;
}

StateDirInit init_state_dir(const std::filesystem::path& state_dir) {
  if (!state_dir.is_absolute()) throw InvalidArgument("state directory must be an absolute path");
  StateDirInit out;
  std::vector<fs::path> missing;
  for (fs::path p = state_dir; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) break;
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      throw SystemError("state directory cannot be created");
    }
  }
  out.created_dir = !missing.empty();
  require_private_dir(state_dir);

  const fs::path key_path = state_dir / kInstallationKeyFile;
  try {
    read_key_file(key_path);
    return out;
  } catch (const NotFound&) {
  }
  std::uint8_t bytes[kInstallationKeyBytes];
  core::random_bytes(bytes, sizeof bytes);
  // Written under a temporary name and linked into place: a concurrent init keeps the first key.
  const fs::path temp = state_dir / (".installation.key-" + std::to_string(::getpid()));
  core::StateFs& state_fs = store::default_state_fs();
  state_fs.remove(temp);
  try {
    state_fs.create_file(temp, std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes),
                         core::NewFile{});
  } catch (const core::StateFsError& error) {
    throw core::StateFsError(error, error.step() == core::StateFsStep::kCreate
                                        ? "installation key cannot be created"
                                        : "installation key cannot be written");
  }
  bool linked = true;
  try {
    state_fs.link(temp, key_path);
  } catch (const core::StateFsError& error) {
    state_fs.remove(temp);
    if (error.error() != EEXIST) {
      throw core::StateFsError(error, "installation key cannot be placed");
    }
    linked = false;
  }
  state_fs.remove(temp);
  out.created_key = linked;
  try {
    state_fs.sync_dir(state_dir, support::Follow::kSymlinks);
  } catch (const core::StateFsError&) {
    // best effort, as before: the key is read back below
  }
  read_key_file(key_path);
  return out;
}

std::string read_installation_key(const std::filesystem::path& state_dir) {
  return read_key_file(state_dir / kInstallationKeyFile);
}

}  // namespace ctx::runtime
