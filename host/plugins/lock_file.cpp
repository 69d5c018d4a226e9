#include "host/plugins/lock_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/plugins/detail/unique_fd.hpp"
#include "host/plugins/errors.hpp"

namespace ctx::plugins {
namespace {

constexpr std::size_t kMaxLockFileBytes = 16u << 20;

std::string errno_text(int error) { return std::strerror(error); }

// Why `entry` is not a valid lock entry, or nullopt.
std::optional<std::string> entry_problem(const LockEntry& entry) {
  if (!is_valid_plugin_id(entry.id)) return "invalid plugin id \"" + entry.id + "\"";
  if (!is_valid_semver(entry.version)) return "invalid version \"" + entry.version + "\"";
  if (!core::is_sha256_hex(entry.sha256)) return "sha256 must be 64 lower-case hex characters";
  if (entry.platform.empty()) return "platform must not be empty";
  if (entry.path.empty() || entry.path.front() != '/') return "path must be absolute";
  return std::nullopt;
}

[[noreturn]] void malformed(std::string_view origin, const std::string& reason) {
  throw MalformedLockFile("malformed lock file " + std::string(origin) + ": " + reason);
}

const core::Json& field(const core::Json& object, const char* name, std::string_view where) {
  const auto it = object.find(name);
  if (it == object.end()) {
    throw MalformedLockFile(std::string(where) + " is missing \"" + name + "\"");
  }
  return *it;
}

std::string string_field(const core::Json& object, const char* name, std::string_view where) {
  const core::Json& value = field(object, name, where);
  if (!value.is_string()) {
    throw MalformedLockFile(std::string(where) + " field \"" + name + "\" must be a string");
  }
  return value.get<std::string>();
}

std::uint32_t u32_field(const core::Json& object, const char* name, std::string_view where) {
  const core::Json& value = field(object, name, where);
  if (!value.is_number_unsigned() ||
      value.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
    throw MalformedLockFile(std::string(where) + " field \"" + name +
                            "\" must be an unsigned 32-bit integer");
  }
  return static_cast<std::uint32_t>(value.get<std::uint64_t>());
}

void require_keys(const core::Json& object, std::initializer_list<std::string_view> keys,
                  std::string_view where) {
  for (const auto& item : object.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      throw MalformedLockFile(std::string(where) + " has unknown field \"" + item.key() + "\"");
    }
  }
}

auto entry_key(const LockEntry& e) { return std::tie(e.kind, e.id); }

}  // namespace

PluginIdentity LockEntry::identity() const {
  return PluginIdentity{kind, id, version, abi_major, abi_minor, sha256};
}

core::Json LockEntry::to_json() const {
  return core::Json{{"abi", {{"major", abi_major}, {"minor", abi_minor}}},
                    {"id", id},
                    {"kind", std::string(kind_name(kind))},
                    {"path", path},
                    {"platform", platform},
                    {"sha256", sha256},
                    {"version", version}};
}

LockEntry LockEntry::from_json(const core::Json& value) {
  constexpr std::string_view kWhere = "lock entry";
  if (!value.is_object()) throw MalformedLockFile("lock entry must be an object");
  require_keys(value, {"abi", "id", "kind", "path", "platform", "sha256", "version"}, kWhere);
  LockEntry entry;
  try {
    entry.kind = parse_kind(string_field(value, "kind", kWhere));
  } catch (const InvalidArgument& e) {
    throw MalformedLockFile(std::string("lock entry: ") + e.what());
  }
  entry.id = string_field(value, "id", kWhere);
  entry.version = string_field(value, "version", kWhere);
  entry.sha256 = string_field(value, "sha256", kWhere);
  entry.platform = string_field(value, "platform", kWhere);
  entry.path = string_field(value, "path", kWhere);
  const core::Json& abi = field(value, "abi", kWhere);
  if (!abi.is_object()) throw MalformedLockFile("lock entry field \"abi\" must be an object");
  require_keys(abi, {"major", "minor"}, "lock entry abi");
  entry.abi_major = u32_field(abi, "major", "lock entry abi");
  entry.abi_minor = u32_field(abi, "minor", "lock entry abi");
  if (const auto problem = entry_problem(entry)) {
    throw MalformedLockFile("lock entry " + entry.label() + ": " + *problem);
  }
  return entry;
}

LockFile LockFile::parse(std::string_view text, std::string_view origin) {
  core::Json root;
  try {
    root = core::parse_json(text);
  } catch (const Error& e) {
    malformed(origin, e.what());
  }
  try {
    if (!root.is_object()) throw MalformedLockFile("top level must be an object");
    require_keys(root, {"entries", "schema"}, "lock file");
    if (string_field(root, "schema", "lock file") != kLockSchema) {
      throw MalformedLockFile("schema must be \"" + std::string(kLockSchema) + "\"");
    }
    const core::Json& entries = field(root, "entries", "lock file");
    if (!entries.is_array()) throw MalformedLockFile("\"entries\" must be an array");
    LockFile lock;
    for (const core::Json& item : entries) {
      LockEntry entry = LockEntry::from_json(item);
      if (lock.find(entry.kind, entry.id) != nullptr) {
        throw MalformedLockFile("duplicate entry " + entry.label());
      }
      lock.upsert(std::move(entry));
    }
    return lock;
  } catch (const MalformedLockFile& e) {
    malformed(origin, e.what());
  }
}

LockFile LockFile::load(const std::filesystem::path& path) {
  detail::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    const int error = errno;
    if (error == ENOENT) throw PluginFileNotFound("lock file " + path.string() + " not found");
    throw SystemError("cannot open lock file " + path.string() + ": " + errno_text(error));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw SystemError("cannot stat lock file " + path.string() + ": " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) malformed(path.string(), "not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxLockFileBytes) {
    malformed(path.string(), "larger than 16 MiB");
  }
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot read lock file " + path.string() + ": " + errno_text(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxLockFileBytes) malformed(path.string(), "larger than 16 MiB");
  }
  return parse(text, path.string());
}

LockFile LockFile::load_or_empty(const std::filesystem::path& path) {
  try {
    return load(path);
  } catch (const PluginFileNotFound&) {
    return LockFile{};
  }
}

void LockFile::save(const std::filesystem::path& path) const {
  const std::string text = core::canonical_json(to_json()) + "\n";
  const std::filesystem::path absolute = std::filesystem::absolute(path);
  const std::filesystem::path dir = absolute.parent_path();
  std::string temp = (dir / (absolute.filename().string() + ".tmp-XXXXXX")).string();
  detail::UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (!fd) {
    throw SystemError("cannot create a temporary lock file in " + dir.string() + ": " +
                      errno_text(errno));
  }
  detail::TempFileGuard guard(temp);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot write lock file " + temp + ": " + errno_text(errno));
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0) {
    throw SystemError("cannot flush lock file " + temp + ": " + errno_text(errno));
  }
  fd.reset();
  if (::rename(temp.c_str(), absolute.c_str()) != 0) {
    throw SystemError("cannot replace lock file " + absolute.string() + ": " + errno_text(errno));
  }
  guard.release();
  detail::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd) ::fsync(dir_fd.get());  // best effort: the rename is already visible
}

void LockFile::upsert(LockEntry entry) {
  if (const auto problem = entry_problem(entry)) {
    throw InvalidArgument("lock entry " + entry.label() + ": " + *problem);
  }
  const auto it = std::lower_bound(
      entries_.begin(), entries_.end(), entry,
      [](const LockEntry& a, const LockEntry& b) { return entry_key(a) < entry_key(b); });
  if (it != entries_.end() && entry_key(*it) == entry_key(entry)) {
    *it = std::move(entry);
  } else {
    entries_.insert(it, std::move(entry));
  }
}

const LockEntry* LockFile::find(PluginKind kind, std::string_view id) const noexcept {
  for (const LockEntry& entry : entries_) {
    if (entry.kind == kind && entry.id == id) return &entry;
  }
  return nullptr;
}

core::Json LockFile::to_json() const {
  core::Json entries = core::Json::array();
  for (const LockEntry& entry : entries_) entries.push_back(entry.to_json());
  return core::Json{{"entries", std::move(entries)}, {"schema", std::string(kLockSchema)}};
}

}  // namespace ctx::plugins
