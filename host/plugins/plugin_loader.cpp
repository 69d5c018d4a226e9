#include "host/plugins/plugin_loader.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE, RENAME_EXCHANGE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif
#include <boost/dll/shared_library.hpp>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/plugins/detail/elf_check.hpp"
#include "host/plugins/detail/ops_table.hpp"
#include "host/plugins/detail/unique_fd.hpp"
#include "host/plugins/errors.hpp"

namespace ctx::plugins {

struct LoadedPlugin::Library {
  boost::dll::shared_library library;
};

namespace {

namespace fs = std::filesystem;
using detail::TempFileGuard;
using detail::UniqueFd;

constexpr std::size_t kCopyBufferBytes = 256 * 1024;
constexpr std::size_t kMaxDescriptorText = 256;

std::string errno_text(int error) { return std::strerror(error); }

// Directories a load created; removed again (deepest first) unless keep() is called, so a
// failed load leaves the disk as it found it.
class CreatedDirs {
 public:
  CreatedDirs() = default;
  CreatedDirs(const CreatedDirs&) = delete;
  CreatedDirs& operator=(const CreatedDirs&) = delete;
  ~CreatedDirs() {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) ::rmdir(it->c_str());
  }
  void add(fs::path dir) { dirs_.push_back(std::move(dir)); }
  void keep() noexcept { dirs_.clear(); }

 private:
  std::vector<fs::path> dirs_;
};

// Creates `dir` with `mode` if missing, recording it in `created`.
void make_dir(const fs::path& dir, mode_t mode, CreatedDirs& created) {
  if (::mkdir(dir.c_str(), mode) == 0) {
    created.add(dir);
  } else if (errno != EEXIST) {
    throw SystemError("cannot create directory " + dir.string() + ": " + errno_text(errno));
  }
}

// Creates `dir` with mode 0700 if missing; requires a directory (not a symlink) owned by us or
// root, and removes group/other permission bits from it.
void ensure_private_dir(const fs::path& dir, CreatedDirs& created) {
  make_dir(dir, 0700, created);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    throw SystemError("cannot stat plugin cache directory " + dir.string() + ": " +
                      errno_text(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw UnsafePluginFile("plugin cache " + dir.string() + " is not a regular directory");
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    throw UnsafePluginFile("plugin cache " + dir.string() + " has the wrong owner (uid " +
                           std::to_string(st.st_uid) + ")");
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    throw SystemError("cannot make plugin cache " + dir.string() + " private: " +
                      errno_text(errno));
  }
}

// Creates the state directory's missing parents (0755 before umask), then the state directory,
// its plugins/ and plugins/sha256/ as private directories.
void ensure_cache_dirs(const fs::path& state_dir, CreatedDirs& created) {
  std::vector<fs::path> missing;
  for (fs::path dir = state_dir.parent_path(); !dir.empty() && !fs::exists(dir);
       dir = dir.parent_path()) {
    missing.push_back(dir);
    if (dir == dir.root_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) make_dir(*it, 0755, created);
  ensure_private_dir(state_dir, created);
  ensure_private_dir(state_dir / "plugins", created);
  ensure_private_dir(state_dir / "plugins" / "sha256", created);
}

// Opens `path` without following a final symlink and checks that it is safe to read.
UniqueFd open_plugin_file(const fs::path& path, struct stat& st) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      throw PluginFileNotFound("plugin file " + path.string() + " not found");
    }
    if (error == ELOOP) throw UnsafePluginFile("plugin file " + path.string() + " is a symlink");
    throw SystemError("cannot open plugin file " + path.string() + ": " + errno_text(error));
  }
  if (::fstat(fd.get(), &st) != 0) {
    throw SystemError("cannot stat plugin file " + path.string() + ": " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw UnsafePluginFile("plugin file " + path.string() + " is not a regular file");
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    throw UnsafePluginFile("plugin file " + path.string() + " has the wrong owner (uid " +
                           std::to_string(st.st_uid) + ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw UnsafePluginFile("plugin file " + path.string() + " is group- or world-writable");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxPluginBytes) {
    throw UnsafePluginFile("plugin file " + path.string() + " is too large");
  }
  return fd;
}

void write_all(int fd, const char* data, std::size_t size, const std::string& what) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot write " + what + ": " + errno_text(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// A verified file in the cache, and whether this load created the cache name.
struct CachedCopy {
  fs::path path;
  std::string sha256;
  bool created = false;
};

// Streams `source` into a temp file in `cache_dir` while hashing the same buffers, compares the
// digest with `expected` (when given), checks the entry symbol, and publishes <hex>.so (0500).
CachedCopy copy_into_cache(const fs::path& source, const fs::path& cache_dir,
                           const std::optional<std::string>& expected, const std::string& label) {
  struct stat st {};
  UniqueFd in = open_plugin_file(source, st);

  std::string temp = (cache_dir / "incoming-XXXXXX").string();
  UniqueFd out(::mkostemp(temp.data(), O_CLOEXEC));
  if (!out) {
    throw SystemError("cannot create a file in the plugin cache " + cache_dir.string() + ": " +
                      errno_text(errno));
  }
  TempFileGuard temp_guard(temp);

  core::Sha256 hasher;
  const auto buffer = std::make_unique_for_overwrite<char[]>(kCopyBufferBytes);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(in.get(), buffer.get(), kCopyBufferBytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot read plugin file " + source.string() + ": " + errno_text(errno));
    }
    if (n == 0) break;
    total += static_cast<std::uint64_t>(n);
    if (total > kMaxPluginBytes) {
      throw UnsafePluginFile("plugin file " + source.string() + " is too large");
    }
    hasher.update(buffer.get(), static_cast<std::size_t>(n));
    write_all(out.get(), buffer.get(), static_cast<std::size_t>(n), "the plugin cache");
  }
  const std::string actual = core::to_hex(hasher.finish());
  if (expected && *expected != actual) throw PluginDigestMismatch(label, *expected, actual);

  detail::require_exported_function(out.get(), total, CTX_PLUGIN_ENTRY_SYMBOL, label);

  if (::fchmod(out.get(), 0500) != 0) {
    throw SystemError("cannot seal the plugin cache file: " + errno_text(errno));
  }
  out.reset();
  CachedCopy copy;
  copy.path = cache_dir / (actual + ".so");
  copy.sha256 = actual;
  // Publish atomically. A cache file of the same digest from an earlier load is swapped out
  // (RENAME_EXCHANGE) rather than renamed over: the bytes loaded are always the bytes hashed by
  // this load, and ext4 does not force the new file's blocks out as it does for rename-over.
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, copy.path.c_str(), RENAME_NOREPLACE) == 0) {
    copy.created = true;
    temp_guard.release();
  } else if (errno == EEXIST &&
             ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, copy.path.c_str(), RENAME_EXCHANGE) ==
                 0) {
    // `temp` now names the previous cache file; temp_guard unlinks it.
  } else if ((errno == EINVAL || errno == ENOSYS) &&
             ::rename(temp.c_str(), copy.path.c_str()) == 0) {
    temp_guard.release();  // a filesystem without renameat2 flags: plain atomic replace
  } else {
    throw SystemError("cannot publish " + copy.path.string() + ": " + errno_text(errno));
  }
  return copy;
}

// Reads a descriptor string defensively (bounded, may be null).
std::string descriptor_text(const char* text) {
  if (text == nullptr) return {};
  return std::string(text, ::strnlen(text, kMaxDescriptorText));
}

std::string abi_text(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// Applies the version rule of plugin_abi.h and validates the descriptor and the ops table of its
// kind. Returns the declared identity (sha256 left empty). `file` names the plugin until its id
// is known to be valid.
PluginIdentity validate_descriptor(const ctx_plugin_descriptor* d,
                                   const ctx_host_negotiation& host, const std::string& file) {
  if (d == nullptr) throw BrokenPluginTable("plugin " + file + " returned a null descriptor");
  const std::string declared_id = descriptor_text(
      d->struct_size >= CTX_TABLE_END(ctx_plugin_descriptor, id) ? d->id : nullptr);
  const std::string name =
      is_valid_plugin_id(declared_id) ? "\"" + declared_id + "\"" : file;

  if (d->abi_major != host.abi_major) {
    throw PluginAbiMismatch("plugin " + name + " is built for plugin ABI major " +
                            std::to_string(d->abi_major) + "; this host provides major " +
                            std::to_string(host.abi_major) + " (" +
                            abi_text(host.abi_major, host.abi_minor_max) + ")");
  }
  if (d->struct_size < CTX_TABLE_END(ctx_plugin_descriptor, ops)) {
    throw BrokenPluginTable("plugin " + name + " descriptor struct_size " +
                            std::to_string(d->struct_size) + " is smaller than the " +
                            std::to_string(CTX_TABLE_END(ctx_plugin_descriptor, ops)) +
                            " bytes of ABI " + abi_text(host.abi_major, 0));
  }
  if (d->abi_minor_required > host.abi_minor_max) {
    throw PluginAbiMismatch("plugin " + name + " requires plugin ABI " +
                            abi_text(d->abi_major, d->abi_minor_required) +
                            "; this host provides " + abi_text(host.abi_major, host.abi_minor_max));
  }
  if (d->abi_minor_built < host.abi_minor_min) {
    throw PluginAbiMismatch("plugin " + name + " was built against plugin ABI " +
                            abi_text(d->abi_major, d->abi_minor_built) +
                            "; this host requires at least " +
                            abi_text(host.abi_major, host.abi_minor_min));
  }
  if (!is_known_kind(d->kind)) {
    throw BrokenPluginTable("plugin " + name + " declares unknown kind " + std::to_string(d->kind));
  }
  if (!is_valid_plugin_id(declared_id)) {
    throw BrokenPluginTable("plugin " + file + " declares an invalid id \"" + declared_id +
                            "\" (want [a-z0-9][a-z0-9._-]{0,63})");
  }
  const std::string version = descriptor_text(d->version);
  if (!is_valid_semver(version)) {
    throw BrokenPluginTable("plugin " + name + " declares an invalid version \"" + version +
                            "\" (want a semantic version)");
  }
  const auto null_op = [&](const char* op) {
    return BrokenPluginTable("plugin " + name + " is broken: required op " + op + " is null");
  };
  if (d->create == nullptr) throw null_op("create");
  if (d->destroy == nullptr) throw null_op("destroy");
  if (d->ops == nullptr) throw null_op("ops");

  // Every op a kind requires must lie within the table's struct_size and be non-null.
  const auto too_small = [&](std::uint32_t size, const char* op) {
    return BrokenPluginTable("plugin " + name + " ops table struct_size " + std::to_string(size) +
                             " does not cover required op " + op);
  };
#define CTX_REQUIRE_OP(table, type, field)                                  \
  do {                                                                      \
    if ((table)->struct_size < CTX_TABLE_END(type, field)) {                \
      throw too_small((table)->struct_size, #field);                        \
    }                                                                       \
    if ((table)->field == nullptr) throw null_op(#field);                   \
  } while (false)

  const auto kind = static_cast<PluginKind>(d->kind);
  switch (kind) {
    case PluginKind::kVerifier: {
      const auto* ops = static_cast<const ctx_verifier_ops*>(d->ops);
      CTX_REQUIRE_OP(ops, ctx_verifier_ops, verify);
      break;
    }
    case PluginKind::kInstaller: {
      const auto* ops = static_cast<const ctx_installer_ops*>(d->ops);
      CTX_REQUIRE_OP(ops, ctx_installer_ops, target_identity);
      CTX_REQUIRE_OP(ops, ctx_installer_ops, install);
      CTX_REQUIRE_OP(ops, ctx_installer_ops, activate);
      CTX_REQUIRE_OP(ops, ctx_installer_ops, deactivate);
      CTX_REQUIRE_OP(ops, ctx_installer_ops, reconcile);
      break;
    }
    case PluginKind::kHostAdapter: {
      const auto* ops = static_cast<const ctx_host_adapter_ops*>(d->ops);
      CTX_REQUIRE_OP(ops, ctx_host_adapter_ops, parse_hook);
      CTX_REQUIRE_OP(ops, ctx_host_adapter_ops, render_reply);
      break;
    }
  }
#undef CTX_REQUIRE_OP

  PluginIdentity identity;
  identity.kind = kind;
  identity.id = declared_id;
  identity.version = version;
  identity.abi_major = d->abi_major;
  identity.abi_minor = d->abi_minor_built;
  return identity;
}

// dlopens the verified cache file, negotiates and validates. Removes a cache name this load
// created when anything fails.
std::shared_ptr<const LoadedPlugin> open_cached(const CachedCopy& copy, const std::string& file,
                                                const ctx_host_negotiation& host) {
  try {
    auto library = std::make_unique<LoadedPlugin::Library>();
    try {
      library->library.load(copy.path, boost::dll::load_mode::rtld_now |
                                           boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
      throw PluginLoadFailed("plugin " + file + " failed to load: " + e.what());
    }
    if (!library->library.has(CTX_PLUGIN_ENTRY_SYMBOL)) {
      throw MissingEntrySymbol("plugin " + file + " does not export the entry symbol " +
                               CTX_PLUGIN_ENTRY_SYMBOL);
    }
    const auto entry =
        library->library.get<const ctx_plugin_descriptor*(const ctx_host_negotiation*)>(
            CTX_PLUGIN_ENTRY_SYMBOL);
    const ctx_plugin_descriptor* descriptor = entry(&host);
    PluginIdentity identity = validate_descriptor(descriptor, host, file);
    identity.sha256 = copy.sha256;
    return std::make_shared<const LoadedPlugin>(std::move(library), descriptor,
                                                std::move(identity), copy.path);
  } catch (...) {
    if (copy.created) ::unlink(copy.path.c_str());
    throw;
  }
}

}  // namespace

ctx_host_negotiation host_negotiation() noexcept {
  return ctx_host_negotiation{sizeof(ctx_host_negotiation), CTX_ABI_MAJOR, 0, CTX_ABI_MINOR};
}

LoadedPlugin::LoadedPlugin(std::unique_ptr<Library> library,
                           const ctx_plugin_descriptor* descriptor, PluginIdentity identity,
                           std::filesystem::path cache_path)
    : library_(std::move(library)),
      descriptor_(descriptor),
      identity_(std::move(identity)),
      cache_path_(std::move(cache_path)) {
  CTX_CHECK(library_ != nullptr && descriptor_ != nullptr);
}

LoadedPlugin::~LoadedPlugin() = default;

const ctx_verifier_ops* LoadedPlugin::verifier_ops() const noexcept {
  return kind() == PluginKind::kVerifier ? static_cast<const ctx_verifier_ops*>(descriptor_->ops)
                                         : nullptr;
}

const ctx_installer_ops* LoadedPlugin::installer_ops() const noexcept {
  return kind() == PluginKind::kInstaller
             ? static_cast<const ctx_installer_ops*>(descriptor_->ops)
             : nullptr;
}

const ctx_host_adapter_ops* LoadedPlugin::host_adapter_ops() const noexcept {
  return kind() == PluginKind::kHostAdapter
             ? static_cast<const ctx_host_adapter_ops*>(descriptor_->ops)
             : nullptr;
}

PluginLoader::PluginLoader(std::filesystem::path state_dir)
    : PluginLoader(std::move(state_dir), host_negotiation()) {}

PluginLoader::PluginLoader(std::filesystem::path state_dir, const ctx_host_negotiation& host)
    : state_dir_(std::filesystem::absolute(state_dir).lexically_normal()), host_(host) {
  CTX_CHECK(host_.abi_minor_min <= host_.abi_minor_max);
}

std::filesystem::path PluginLoader::cache_dir() const {
  return state_dir_ / "plugins" / "sha256";
}

std::shared_ptr<const LoadedPlugin> PluginLoader::load(const LockEntry& entry) const {
  const std::string label = entry.label();
  if (entry.platform != current_platform()) {
    throw PluginIdentityMismatch("plugin " + label + " is pinned for platform " + entry.platform +
                                 "; this host is " + current_platform());
  }
  CreatedDirs created;
  ensure_cache_dirs(state_dir_, created);
  const CachedCopy copy = copy_into_cache(entry.path, cache_dir(), entry.sha256, label);
  auto plugin = open_cached(copy, label + " (" + entry.path + ")", host_);
  const PluginIdentity& declared = plugin->identity();
  if (declared != entry.identity()) {
    if (copy.created) ::unlink(copy.path.c_str());
    throw PluginIdentityMismatch(
        "plugin " + label + " declares " + declared.label() + " " + declared.version + " (abi " +
        abi_text(declared.abi_major, declared.abi_minor) + "); the lock pins " + label + " " +
        entry.version + " (abi " + abi_text(entry.abi_major, entry.abi_minor) + ")");
  }
  created.keep();
  return plugin;
}

std::shared_ptr<const LoadedPlugin> PluginLoader::load_unpinned(
    const std::filesystem::path& file) const {
  CreatedDirs created;
  ensure_cache_dirs(state_dir_, created);
  const std::string label = file.string();
  const CachedCopy copy = copy_into_cache(file, cache_dir(), std::nullopt, label);
  auto plugin = open_cached(copy, label, host_);
  created.keep();
  return plugin;
}

LockEntry PluginLoader::inspect_for_pin(const std::filesystem::path& file) const {
  const auto plugin = load_unpinned(file);
  const PluginIdentity& identity = plugin->identity();
  LockEntry entry;
  entry.kind = identity.kind;
  entry.id = identity.id;
  entry.version = identity.version;
  entry.sha256 = identity.sha256;
  entry.abi_major = identity.abi_major;
  entry.abi_minor = identity.abi_minor;
  entry.platform = current_platform();
  entry.path = std::filesystem::absolute(file).lexically_normal().string();
  return entry;
}

}  // namespace ctx::plugins
