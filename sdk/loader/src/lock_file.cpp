#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctx/loader/detail/trusted_path.hpp>
#include <ctx/loader/detail/unique_fd.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/loader/lock_file.hpp>
#include <ctx/sdk/error.hpp>
#include <ctx/support/canonical_json.hpp>
#include <ctx/support/strict_json.hpp>
#include <ctx/support/text.hpp>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

namespace ctx::plugins {
namespace {

using detail::UniqueFd;

constexpr std::size_t kMaxNeededEntries = 256;

std::string errno_text(int error) { return std::strerror(error); }

bool is_valid_soname(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return c == '/' || u < 0x20 || u == 0x7f;
  });
}

// Why `entry` is not a valid lock entry, or nullopt.
std::optional<std::string> entry_problem(const LockEntry& entry) {
  if (!is_valid_plugin_id(entry.id)) return "invalid plugin id \"" + entry.id + "\"";
  if (!is_valid_semver(entry.version)) return "invalid version \"" + entry.version + "\"";
  if (!support::is_sha256_hex(entry.sha256)) return "sha256 must be 64 lower-case hex characters";
  if (entry.platform.empty()) return "platform must not be empty";
  if (const std::string problem = detail::path_problem(entry.path); !problem.empty()) {
    return "path " + problem + " (it must be absolute and normalised)";
  }
  if (entry.needed.size() > kMaxNeededEntries) return "too many needed sonames";
  for (const std::string& name : entry.needed) {
    if (!is_valid_soname(name)) return "needed soname \"" + name + "\" is invalid";
  }
  return std::nullopt;
}

[[noreturn]] void malformed(std::string_view origin, const std::string& reason) {
  throw MalformedLockFile("malformed lock file " + std::string(origin) + ": " + reason);
}

const Json& field(const Json& object, const char* name, std::string_view where) {
  const auto it = object.find(name);
  if (it == object.end()) {
    throw MalformedLockFile(std::string(where) + " is missing \"" + name + "\"");
  }
  return *it;
}

std::string string_field(const Json& object, const char* name, std::string_view where) {
  const Json& value = field(object, name, where);
  if (!value.is_string()) {
    throw MalformedLockFile(std::string(where) + " field \"" + name + "\" must be a string");
  }
  return value.get<std::string>();
}

std::uint64_t uint_field(const Json& object, const char* name, std::string_view where,
                         std::uint64_t max) {
  const Json& value = field(object, name, where);
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() > max) {
    throw MalformedLockFile(std::string(where) + " field \"" + name +
                            "\" must be an unsigned integer <= " + std::to_string(max));
  }
  return value.get<std::uint64_t>();
}

void require_keys(const Json& object, std::initializer_list<std::string_view> keys,
                  std::string_view where) {
  for (const auto& item : object.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      throw MalformedLockFile(std::string(where) + " has unknown field \"" + item.key() + "\"");
    }
  }
}

auto entry_key(const LockEntry& e) { return std::tie(e.kind, e.id); }

// Reads the lock at `path` (absolute, normalised) through a trusted walk; nullopt if missing.
std::optional<LockFile> read_lock(const std::string& path) {
  detail::TrustedFile file;
  try {
    file = detail::open_trusted_file(path, detail::Owners::kRootOrUs, "lock file");
  } catch (const PluginFileNotFound&) {
    return std::nullopt;
  }
  const auto size = static_cast<std::uint64_t>(file.st.st_size);
  if (size > kMaxLockFileBytes) malformed(path, "larger than 16 MiB");
  std::string text(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(file.fd.get(), text.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot read lock file " + path + ": " + errno_text(errno));
    }
    if (n == 0) malformed(path, "shorter than its size (changed while read)");
    done += static_cast<std::size_t>(n);
  }
  return LockFile::parse(text, path);
}

// Writes `text` as `name` in `dir` atomically (temp + fsync + rename + directory fsync).
void replace_in_dir(int dir, const std::string& name, const std::string& text,
                    const std::string& shown) {
  std::random_device random;
  std::string temp;
  UniqueFd fd;
  for (int attempt = 0; attempt < 16 && !fd; ++attempt) {
    temp = "." + name + ".tmp-" + std::to_string(random()) + std::to_string(::getpid());
    fd = UniqueFd(
        ::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd && errno != EEXIST) break;
  }
  if (!fd) {
    throw SystemError("cannot create a temporary lock file beside " + shown + ": " +
                      errno_text(errno));
  }
  bool renamed = false;
  struct Cleanup {
    int dir;
    const std::string& temp;
    const bool& renamed;
    ~Cleanup() {
      if (!renamed) ::unlinkat(dir, temp.c_str(), 0);
    }
  } cleanup{dir, temp, renamed};
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot write lock file " + shown + ": " + errno_text(errno));
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0) {
    throw SystemError("cannot flush lock file " + shown + ": " + errno_text(errno));
  }
  fd.reset();
  if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
    throw SystemError("cannot replace lock file " + shown + ": " + errno_text(errno));
  }
  renamed = true;
  UniqueFd sync(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!sync || ::fsync(sync.get()) != 0) {
    throw SystemError("cannot flush the directory of lock file " + shown + ": " +
                      errno_text(errno));
  }
}

std::pair<std::string, std::string> split_parent(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

PluginIdentity LockEntry::identity() const {
  return PluginIdentity{kind, id, version, abi_major, abi_minor, sha256};
}

Json LockEntry::to_json() const {
  return Json{{"abi", {{"major", abi_major}, {"minor", abi_minor}}},
              {"id", id},
              {"kind", std::string(kind_name(kind))},
              {"needed", needed},
              {"path", path},
              {"platform", platform},
              {"sha256", sha256},
              {"size", size},
              {"version", version}};
}

LockEntry LockEntry::from_json(const Json& value) {
  constexpr std::string_view kWhere = "lock entry";
  if (!value.is_object()) throw MalformedLockFile("lock entry must be an object");
  require_keys(value,
               {"abi", "id", "kind", "needed", "path", "platform", "sha256", "size", "version"},
               kWhere);
  LockEntry entry;
  try {
    entry.kind = parse_kind(string_field(value, "kind", kWhere));
  } catch (const InvalidArgument& e) {
    throw MalformedLockFile(std::string("lock entry: ") + e.what());
  }
  entry.id = string_field(value, "id", kWhere);
  entry.version = string_field(value, "version", kWhere);
  entry.sha256 = string_field(value, "sha256", kWhere);
  entry.size = uint_field(value, "size", kWhere, kMaxPluginBytes);
  entry.platform = string_field(value, "platform", kWhere);
  entry.path = string_field(value, "path", kWhere);
  const Json& needed = field(value, "needed", kWhere);
  if (!needed.is_array()) throw MalformedLockFile("lock entry field \"needed\" must be an array");
  for (const Json& name : needed) {
    if (!name.is_string()) throw MalformedLockFile("lock entry \"needed\" holds a non-string");
    entry.needed.push_back(name.get<std::string>());
  }
  const Json& abi = field(value, "abi", kWhere);
  if (!abi.is_object()) throw MalformedLockFile("lock entry field \"abi\" must be an object");
  require_keys(abi, {"major", "minor"}, "lock entry abi");
  constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
  entry.abi_major = static_cast<std::uint32_t>(uint_field(abi, "major", "lock entry abi", kU32));
  entry.abi_minor = static_cast<std::uint32_t>(uint_field(abi, "minor", "lock entry abi", kU32));
  if (const auto problem = entry_problem(entry)) {
    throw MalformedLockFile("lock entry " + entry.label() + ": " + *problem);
  }
  return entry;
}

LockFile LockFile::parse(std::string_view text, std::string_view origin) {
  const std::string how_to_fix =
      "; the lock must be canonical JSON (sorted keys, no whitespace, entries sorted by kind "
      "then id) plus one newline, as `ctx plugin pin` writes it: re-create it with `ctx plugin "
      "pin --lock FILE PLUGIN.so...`";
  if (text.empty() || text.back() != '\n')
    malformed(origin, "does not end with a newline" + how_to_fix);
  Json root;
  if (const auto failure = support::read_strict_json(text.substr(0, text.size() - 1), &root, 64)) {
    malformed(origin, support::describe(*failure));
  }
  LockFile lock;
  try {
    if (!root.is_object()) throw MalformedLockFile("top level must be an object");
    require_keys(root, {"entries", "schema"}, "lock file");
    const std::string schema = string_field(root, "schema", "lock file");
    if (schema != kLockSchema) {
      throw MalformedLockFile("schema is \"" + schema + "\", this host reads \"" +
                              std::string(kLockSchema) +
                              "\"; re-pin the plugins with `ctx plugin pin` into a new lock");
    }
    const Json& entries = field(root, "entries", "lock file");
    if (!entries.is_array()) throw MalformedLockFile("\"entries\" must be an array");
    lock.entries_.reserve(entries.size());
    for (const Json& item : entries) {
      LockEntry entry = LockEntry::from_json(item);
      if (!lock.entries_.empty() && !(entry_key(lock.entries_.back()) < entry_key(entry))) {
        if (entry_key(lock.entries_.back()) == entry_key(entry)) {
          throw MalformedLockFile("duplicate entry " + entry.label());
        }
        throw MalformedLockFile("entries are not sorted by kind then id (at " + entry.label() +
                                ")" + how_to_fix);
      }
      lock.entries_.push_back(std::move(entry));
    }
  } catch (const MalformedLockFile& e) {
    malformed(origin, e.what());
  }
  const std::string canonical = support::canonical_json(lock.to_json()) + "\n";
  if (canonical != text) {
    const auto diff = std::mismatch(canonical.begin(), canonical.end(), text.begin(), text.end());
    malformed(origin, "not in canonical form (first difference at byte " +
                          std::to_string(diff.first - canonical.begin()) + ")" + how_to_fix);
  }
  return lock;
}

LockFile LockFile::load(const std::filesystem::path& path) {
  const std::string absolute = detail::absolute_normal(path);
  auto lock = read_lock(absolute);
  if (!lock) throw PluginFileNotFound("lock file " + absolute + " not found");
  return std::move(*lock);
}

LockFile LockFile::load_or_empty(const std::filesystem::path& path) {
  return read_lock(detail::absolute_normal(path)).value_or(LockFile{});
}

LockFile LockFile::update(const std::filesystem::path& path,
                          const std::function<void(LockFile&)>& change) {
  const std::string absolute = detail::absolute_normal(path);
  const auto [parent, name] = split_parent(absolute);
  const UniqueFd dir = detail::open_trusted_dir(parent, detail::Owners::kRootOrUs, "lock file");
  UniqueFd locked(::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!locked) throw SystemError("cannot open " + parent + ": " + errno_text(errno));
  while (::flock(locked.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw SystemError("cannot lock " + parent + ": " + errno_text(errno));
  }
  LockFile lock = read_lock(absolute).value_or(LockFile{});
  change(lock);
  replace_in_dir(dir.get(), name, support::canonical_json(lock.to_json()) + "\n", absolute);
  return lock;  // the flock is released when `locked` closes
}

void LockFile::save(const std::filesystem::path& path) const {
  const std::string absolute = detail::absolute_normal(path);
  const auto [parent, name] = split_parent(absolute);
  const UniqueFd dir = detail::open_trusted_dir(parent, detail::Owners::kRootOrUs, "lock file");
  replace_in_dir(dir.get(), name, support::canonical_json(to_json()) + "\n", absolute);
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
  const auto it = std::lower_bound(
      entries_.begin(), entries_.end(), std::tuple<PluginKind, std::string_view>(kind, id),
      [](const LockEntry& a, const std::tuple<PluginKind, std::string_view>& key) {
        return std::tuple<PluginKind, std::string_view>(a.kind, a.id) < key;
      });
  if (it == entries_.end() || it->kind != kind || it->id != id) return nullptr;
  return &*it;
}

Json LockFile::to_json() const {
  Json entries = Json::array();
  for (const LockEntry& entry : entries_) entries.push_back(entry.to_json());
  return Json{{"entries", std::move(entries)}, {"schema", std::string(kLockSchema)}};
}

}  // namespace ctx::plugins
