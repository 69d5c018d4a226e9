// Digest-pinned plugin loading where the checked bytes are the loaded bytes (DESIGN.md §2).
//
// PluginLoader::load(entry):
//   1. refuses while LD_PRELOAD, LD_AUDIT or LD_LIBRARY_PATH is set (CTX_ALLOW_LOADER_ENV=1
//      overrides it and says so on stderr), and refuses a path inside the state directory;
//   2. walks every directory from "/" to the file with openat(O_NOFOLLOW|O_DIRECTORY) (owned by
//      root or us, not group/other-writable unless sticky), opens the file O_NOFOLLOW|O_CLOEXEC
//      and checks from fstat: regular, owner, mode, size equal to the pin;
//   3. copies exactly that many bytes into a memfd that no other process can open (mode 0 from
//      its creation, made while the process is non-dumpable) while hashing the buffers written
//      (a second thread copies ahead when a core is idle; detail/sealed_copy.hpp), seals it
//      (F_SEAL_WRITE|GROW|SHRINK|SEAL), makes it 0400 and compares: these bytes and only these
//      are ever mapped;
//   4. reads the program headers and PT_DYNAMIC (bounds-checked; detail/elf_reader.hpp): the
//      identity note must equal the lock entry, DT_NEEDED must equal the recorded sonames and
//      each must resolve to a root-owned system library; DT_RPATH/DT_RUNPATH and filters are
//      refused; ctx_plugin_entry must be reachable through the dynamic hash table;
//   5. dlopens "/proc/self/fd/N" of the memfd through Boost.DLL (RTLD_NOW|RTLD_LOCAL; the name is
//      checked unused with RTLD_NOLOAD first), calls ctx_plugin_entry, applies the version rule,
//      and requires the returned descriptor to equal the note and the lock.
// The memfd stays open while the library is loaded (and forever if dlclose keeps it resident),
// so glibc can never match the name to other bytes. Nothing is re-opened by path after
// hashing; nothing is written to disk. inspect_for_pin() and check() execute and map nothing:
// they read the bytes into a private, reused buffer of the calling thread instead of a memfd.
//
// Thread-safety: PluginLoader is immutable and may be used from several threads; a LoadedPlugin
// is immutable and shared through shared_ptr<const LoadedPlugin>.
#ifndef CTX_LOADER_PLUGIN_LOADER_HPP_
#define CTX_LOADER_PLUGIN_LOADER_HPP_

#include <ctx/abi/plugin_abi.h>

#include <cstdint>
#include <ctx/loader/lock_file.hpp>
#include <ctx/loader/plugin_identity.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace ctx::plugins {

// The negotiation this host offers: major CTX_ABI_MAJOR, minors 0..CTX_ABI_MINOR.
ctx_host_negotiation host_negotiation() noexcept;

// Refuses to go on while LD_PRELOAD, LD_AUDIT or LD_LIBRARY_PATH is set (non-empty), naming the
// variable, unless CTX_ALLOW_LOADER_ENV=1 — then writes a warning naming it to stderr on each
// call. Errors: LoaderEnvironmentRefused.
void require_safe_loader_environment();

// Walks `dir` from "/" as the loader walks a plugin's directories: every component a directory
// (no symlink) owned by root or us, not group/other-writable unless sticky. `what` names it.
// Errors: UnsafePluginFile; PluginFileNotFound unless `missing_ok`; SystemError.
void require_trusted_directory(const std::filesystem::path& dir, std::string_view what,
                               bool missing_ok);

// A verified, loaded plugin. Keeps its shared object resident while any shared_ptr to it lives;
// everything obtained from it (descriptor, ops, instances) must not outlive it.
// Non-copyable, non-movable; made only by PluginLoader.
class LoadedPlugin {
 public:
  struct Library;  // implementation detail: the memfd and the boost::dll::shared_library

  LoadedPlugin(std::unique_ptr<Library> library, const ctx_plugin_descriptor* descriptor,
               PluginIdentity identity);
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
  // "/proc/self/fd/N": the name the sealed memfd was loaded under; dlopen(RTLD_NOLOAD) of it
  // finds this library while the object lives.
  const std::string& library_path() const noexcept;

 private:
  std::unique_ptr<Library> library_;  // declared first: destroyed last
  const ctx_plugin_descriptor* descriptor_;
  PluginIdentity identity_;
};

class PluginLoader {
 public:
  // `state_dir` is made absolute and normalised. The loader writes nothing there; it refuses
  // pinned paths inside it (the old cache location).
  explicit PluginLoader(std::filesystem::path state_dir);
  // As above, offering `host` instead of host_negotiation() to plugins: lets a conformance kit
  // play an older or newer host. REQUIRES: host.abi_minor_min <= host.abi_minor_max.
  PluginLoader(std::filesystem::path state_dir, const ctx_host_negotiation& host);

  const std::filesystem::path& state_dir() const noexcept { return state_dir_; }
  const ctx_host_negotiation& negotiation() const noexcept { return host_; }

  // Loads `entry` exactly as pinned (see the file comment).
  // Errors: LoaderEnvironmentRefused; PluginFileNotFound; UnsafePluginFile; PluginDigestMismatch;
  // MalformedElf; MissingEntrySymbol; PluginNoteMismatch; UnsafeDependency; PluginLoadFailed
  // (dlopen text kept); PluginAbiMismatch; BrokenPluginTable; PluginIdentityMismatch (platform,
  // or the declared identity differs from the entry); SystemError.
  std::shared_ptr<const LoadedPlugin> load(const LockEntry& entry) const;

  // Reads `file` (made absolute and normalised) and returns the entry that pins it: identity
  // from its note, sha256, size, needed sonames, this platform. Executes nothing.
  // Errors: as load(), minus the ones that need execution or a pin.
  LockEntry inspect_for_pin(const std::filesystem::path& file) const;

  // Checks `entry` against the bytes now at its path as load() does, without executing or
  // mapping anything: size, sha256, note, needed sonames and their trust. Returns the identity.
  // Errors: as load(), minus LoaderEnvironmentRefused and the ones that need execution.
  PluginIdentity check(const LockEntry& entry) const;

 private:
  std::filesystem::path state_dir_;
  ctx_host_negotiation host_;
};

}  // namespace ctx::plugins

#endif  // CTX_LOADER_PLUGIN_LOADER_HPP_
