// Digest-pinned, TOCTOU-safe plugin loading (DESIGN.md §2).
//
// PluginLoader::load(entry):
//   1. open(entry.path, O_RDONLY|O_NOFOLLOW|O_CLOEXEC) and fstat the descriptor: a regular file,
//      owned by the effective uid or root, not group- or world-writable;
//   2. stream the bytes from that descriptor into a temp file in the private cache
//      <state>/plugins/sha256/ (directories 0700) while hashing the very same buffers;
//   3. compare the digest with the pin BEFORE any code of the file can run;
//   4. check (without loading) that it is an ELF shared object for this machine that exports
//      ctx_plugin_entry, then publish it as <hex>.so (mode 0500);
//   5. dlopen that cache file through Boost.DLL with RTLD_NOW|RTLD_LOCAL, call ctx_plugin_entry
//      with this host's negotiation, apply the version rule and validate the descriptor;
//   6. require the declared identity (kind, id, version, abi) to equal the lock entry.
// The cache file is named by its digest, so glibc's reuse of an already-loaded library by name
// can never hand back other bytes. A failed load leaves the disk as it was: its temp file, and
// any cache file or directory it created, are removed.
//
// Thread-safety: PluginLoader is immutable and may be used from several threads; a LoadedPlugin
// is immutable and shared through shared_ptr<const LoadedPlugin>.
#ifndef CTX_HOST_PLUGINS_PLUGIN_LOADER_HPP_
#define CTX_HOST_PLUGINS_PLUGIN_LOADER_HPP_

#include <ctx/abi/plugin_abi.h>

#include <cstdint>
#include <filesystem>
#include <memory>

#include "host/plugins/lock_file.hpp"
#include "host/plugins/plugin_identity.hpp"

namespace ctx::plugins {

// Largest plugin file the loader accepts.
inline constexpr std::uint64_t kMaxPluginBytes = 256ull << 20;

// The negotiation this host offers: major CTX_ABI_MAJOR, minors 0..CTX_ABI_MINOR.
ctx_host_negotiation host_negotiation() noexcept;

// A verified, loaded plugin. Keeps its shared object resident while any shared_ptr to it lives;
// everything obtained from it (descriptor, ops, instances) must not outlive it.
// Non-copyable, non-movable; made only by PluginLoader.
class LoadedPlugin {
 public:
  struct Library;  // implementation detail: owns the boost::dll::shared_library

  LoadedPlugin(std::unique_ptr<Library> library, const ctx_plugin_descriptor* descriptor,
               PluginIdentity identity, std::filesystem::path cache_path);
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const PluginIdentity& identity() const noexcept { return identity_; }
  PluginKind kind() const noexcept { return identity_.kind; }
  // Validated: struct sizes cover every field the host reads, and every op the kind requires is
  // non-null. Static data of the plugin; valid while this object lives.
  const ctx_plugin_descriptor& descriptor() const noexcept { return *descriptor_; }
  // The ops table of the plugin's kind, or nullptr for another kind.
  const ctx_verifier_ops* verifier_ops() const noexcept;
  const ctx_installer_ops* installer_ops() const noexcept;
  const ctx_host_adapter_ops* host_adapter_ops() const noexcept;
  // The content-addressed cache file the code was loaded from.
  const std::filesystem::path& cache_path() const noexcept { return cache_path_; }

 private:
  std::unique_ptr<Library> library_;  // declared first: destroyed last
  const ctx_plugin_descriptor* descriptor_;
  PluginIdentity identity_;
  std::filesystem::path cache_path_;
};

class PluginLoader {
 public:
  // `state_dir` is made absolute; the cache is <state_dir>/plugins/sha256/. On first use the
  // state directory's missing parents are created, and state_dir, plugins/ and sha256/ are
  // created 0700 (tightened to 0700 if they exist with looser modes).
  explicit PluginLoader(std::filesystem::path state_dir);
  // As above, offering `host` instead of host_negotiation() to plugins: lets a conformance kit
  // play an older or newer host. REQUIRES: host.abi_minor_min <= host.abi_minor_max.
  PluginLoader(std::filesystem::path state_dir, const ctx_host_negotiation& host);

  const std::filesystem::path& state_dir() const noexcept { return state_dir_; }
  const ctx_host_negotiation& negotiation() const noexcept { return host_; }
  std::filesystem::path cache_dir() const;

  // Loads `entry` exactly as pinned (see the file comment).
  // Errors: PluginFileNotFound; UnsafePluginFile; PluginDigestMismatch; MissingEntrySymbol;
  // PluginLoadFailed (dlopen text kept); PluginAbiMismatch; BrokenPluginTable;
  // PluginIdentityMismatch (declared identity or platform differs from the entry); SystemError.
  std::shared_ptr<const LoadedPlugin> load(const LockEntry& entry) const;

  // Trust on first use: copies, hashes and loads `file` through the cache without a pin and
  // returns the entry that pins it (absolute path, this platform, declared identity, sha256).
  // Errors: as load(), minus PluginDigestMismatch and PluginIdentityMismatch.
  LockEntry inspect_for_pin(const std::filesystem::path& file) const;

  // As inspect_for_pin, but also returns the loaded plugin.
  std::shared_ptr<const LoadedPlugin> load_unpinned(const std::filesystem::path& file) const;

 private:
  std::filesystem::path state_dir_;
  ctx_host_negotiation host_;
};

}  // namespace ctx::plugins

#endif  // CTX_HOST_PLUGINS_PLUGIN_LOADER_HPP_
