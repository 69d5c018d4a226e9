#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctx/loader/plugin_loader.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif
#include <boost/dll/shared_library.hpp>
#include <ctx/loader/detail/dependencies.hpp>
#include <ctx/loader/detail/elf_reader.hpp>
#include <ctx/loader/detail/ops_table.hpp>
#include <ctx/loader/detail/sealed_copy.hpp>
#include <ctx/loader/detail/trusted_path.hpp>
#include <ctx/loader/detail/unique_fd.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/sdk/error.hpp>
#include <ctx/support/canonical_json.hpp>
#include <ctx/support/check.hpp>
#include <ctx/support/digest.hpp>
#include <ctx/support/strict_json.hpp>

namespace ctx::plugins {

struct LoadedPlugin::Library {
  detail::UniqueFd memfd;  // declared first: closed after the library is unloaded
  std::string name;        // "/proc/self/fd/N"
  boost::dll::shared_library library;

  ~Library() {
    library.unload();
    // If something keeps the object resident, glibc would hand it back for this name: keep the
    // descriptor (and so the name) taken for the rest of the process.
    if (void* handle = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      ::dlclose(handle);
      static_cast<void>(memfd.release());
    }
  }
};

namespace {

namespace fs = std::filesystem;
using detail::UniqueFd;

constexpr std::size_t kMaxDescriptorText = 256;
constexpr std::string_view kLoaderVariables[] = {"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"};

std::string errno_text(int error) { return std::strerror(error); }

std::string abi_text(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// The identity a note (or a descriptor) declares; sha256 left empty.
std::string identity_text(const PluginIdentity& id) {
  return id.label() + " " + id.version + " (abi " + abi_text(id.abi_major, id.abi_minor) + ")";
}

// The bytes of one plugin file, sealed in a memfd, with what was read from them.
struct SealedPlugin {
  detail::SealedCopy sealed;         // the sealed memfd and its mapping, when it is to be mapped
  std::span<const std::byte> bytes;  // the bytes checked: sealed.map, or this thread's buffer
  std::string path;                  // absolute, normalised
  std::uint64_t size = 0;
  std::string sha256;
  detail::ElfPluginView elf;
  std::optional<PluginIdentity> note;  // set by check_loadable (always, once checked)
};

// Parses a note descriptor: strictly canonical {"abi":{"major","minor"},"id","kind","version"}.
PluginIdentity parse_note(const std::string& text, const std::string& label) {
  const auto bad = [&](const std::string& why) {
    return PluginNoteMismatch("plugin " + label + " has an invalid identity note: " + why);
  };
  Json note;
  if (const auto failure = support::read_strict_json(text, &note, 64)) {
    throw bad(support::describe(*failure));
  }
  try {
    if (support::canonical_json(note) != text) throw bad("json is not canonical");
  } catch (const InvalidArgument& e) {
    throw bad(e.what());
  }
  if (!note.is_object() || note.size() != 4 || !note.contains("abi") || !note.contains("id") ||
      !note.contains("kind") || !note.contains("version")) {
    throw bad("want exactly the keys abi, id, kind, version");
  }
  const Json& abi = note["abi"];
  if (!abi.is_object() || abi.size() != 2 || !abi.contains("major") || !abi.contains("minor") ||
      !abi["major"].is_number_unsigned() || !abi["minor"].is_number_unsigned() ||
      abi["major"].get<std::uint64_t>() > 0xffffffffu ||
      abi["minor"].get<std::uint64_t>() > 0xffffffffu) {
    throw bad("abi must be {\"major\":M,\"minor\":m} with unsigned 32-bit numbers");
  }
  if (!note["id"].is_string() || !note["kind"].is_string() || !note["version"].is_string()) {
    throw bad("id, kind and version must be strings");
  }
  PluginIdentity id;
  try {
    id.kind = parse_kind(note["kind"].get<std::string>());
  } catch (const InvalidArgument& e) {
    throw bad(e.what());
  }
  id.id = note["id"].get<std::string>();
  id.version = note["version"].get<std::string>();
  if (!is_valid_plugin_id(id.id)) throw bad("invalid id \"" + id.id + "\"");
  if (!is_valid_semver(id.version)) throw bad("invalid version \"" + id.version + "\"");
  id.abi_major = static_cast<std::uint32_t>(abi["major"].get<std::uint64_t>());
  id.abi_minor = static_cast<std::uint32_t>(abi["minor"].get<std::uint64_t>());
  return id;
}

// Steps 2-4 of the file comment, up to (not including) the dependency trust check.
void parse_sealed(SealedPlugin& plugin, const std::string& label);

constexpr std::size_t kReadChunkBytes = 256 * 1024;

// Where the checked bytes are kept: a sealed memfd (to be mapped by load) or, for checks that
// never map anything (pin, verify), a private buffer of this thread, reused across calls.
enum class Copy { kSealedMemfd, kPrivateBuffer };

// Reads exactly `size` bytes of `in` into this thread's buffer, hashing each chunk as it lands.
std::span<const std::byte> read_private(int in, std::uint64_t size, const std::string& path,
                                        std::string* sha256) {
  thread_local std::unique_ptr<char[]> buffer;
  thread_local std::size_t capacity = 0;
  if (capacity < size) {
    buffer = std::make_unique_for_overwrite<char[]>(size);
    capacity = size;
  }
  support::Sha256Stream hasher;
  std::uint64_t done = 0;
  while (done < size) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(size - done, kReadChunkBytes));
    const ssize_t n = ::pread(in, buffer.get() + done, want, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot read plugin file " + path + ": " + errno_text(errno));
    }
    if (n == 0) {
      throw UnsafePluginFile("plugin file " + path + " shrank while it was read (size)");
    }
    if (!hasher.update(buffer.get() + done, static_cast<std::size_t>(n))) {
      throw SystemError("sha256: openssl failed");
    }
    done += static_cast<std::uint64_t>(n);
  }
  const auto digest = hasher.finish();
  if (!digest) throw SystemError("sha256: openssl failed");
  *sha256 = support::to_hex(*digest);
  return {reinterpret_cast<const std::byte*>(buffer.get()), static_cast<std::size_t>(size)};
}

SealedPlugin read_sealed(const std::string& path, std::optional<std::uint64_t> pinned_size,
                         const std::string& label, Copy copy) {
  detail::TrustedFile file =
      detail::open_trusted_file(path, detail::Owners::kRootOrUs, "plugin file");
  SealedPlugin out;
  out.path = path;
  out.size = static_cast<std::uint64_t>(file.st.st_size);
  if (out.size > kMaxPluginBytes) throw UnsafePluginFile("plugin file " + path + " is too large");
  if (pinned_size && *pinned_size != out.size) {
    throw UnsafePluginFile("plugin " + label + ": file " + path + " has size " +
                           std::to_string(out.size) + "; the lock pins size " +
                           std::to_string(*pinned_size) + " (its bytes changed)");
  }
  if (out.size == 0) throw MalformedElf("plugin " + label + " is not a loadable elf plugin: empty");
  if (copy == Copy::kPrivateBuffer) {
    out.bytes = read_private(file.fd.get(), out.size, path, &out.sha256);
    if (!pinned_size) parse_sealed(out, label);
    return out;
  }
  out.sealed = detail::make_sealed_copy(file.fd.get(), out.size, label, path);
  out.bytes = out.sealed.map.bytes();
  out.sha256 = out.sealed.sha256;
  if (!pinned_size) parse_sealed(out, label);  // else the caller compares the digest first
  return out;
}

// Parses the ELF of an already-compared copy (second half of read_sealed for pinned loads).
void parse_sealed(SealedPlugin& plugin, const std::string& label) {
  try {
    plugin.elf = detail::read_elf_plugin(plugin.bytes, CTX_PLUGIN_ENTRY_SYMBOL);
  } catch (const MalformedElf& e) {
    throw MalformedElf("plugin " + label + " is not a loadable elf plugin: " + e.what());
  }
}

// The rules of step 4 that need no lock: entry symbol, no search paths, trusted dependencies,
// a valid note when there is one.
void check_loadable(SealedPlugin& plugin, const std::string& label) {
  const detail::ElfPluginView& elf = plugin.elf;
  if (!elf.entry_found) {
    throw MissingEntrySymbol("plugin " + label + " does not export the entry symbol " +
                             CTX_PLUGIN_ENTRY_SYMBOL + " (" + elf.entry_problem + ")");
  }
  const auto search_path = [&](const char* tag, const std::vector<std::string>& values) {
    if (values.empty()) return;
    throw UnsafeDependency("plugin " + label + " has " + tag + " \"" + values.front() +
                           "\": a library search path of its own would let unpinned libraries "
                           "load; rebuild it without one");
  };
  search_path("DT_RPATH", elf.rpath);
  search_path("DT_RUNPATH", elf.runpath);
  if (!elf.filters.empty()) {
    throw UnsafeDependency("plugin " + label + " has a filter or audit entry \"" +
                           elf.filters.front() + "\", which would load unpinned code");
  }
  detail::DependencyResolver resolver;
  resolver.check(elf.needed, label);
  if (!elf.identity_note) {
    throw PluginNoteMismatch("plugin " + label + " has no identity note (section " +
                             std::string(detail::kIdentityNoteSection) +
                             ", note \"ctx\" type 1): build it with the SDK's CTX_PLUGIN macro");
  }
  plugin.note = parse_note(*elf.identity_note, label);
  plugin.note->sha256 = plugin.sha256;
}

// The version rule applied to the note alone (no code runs): same major, required minor
// within what `host` provides.
void check_note_abi(const PluginIdentity& note, const ctx_host_negotiation& host,
                    const std::string& label) {
  if (note.abi_major != host.abi_major) {
    throw PluginAbiMismatch("plugin \"" + note.id + "\" (" + label +
                            ") is built for plugin ABI major " + std::to_string(note.abi_major) +
                            "; this host provides major " + std::to_string(host.abi_major) + " (" +
                            abi_text(host.abi_major, host.abi_minor_max) + ")");
  }
  if (note.abi_minor > host.abi_minor_max) {
    throw PluginAbiMismatch("plugin \"" + note.id + "\" (" + label + ") requires plugin ABI " +
                            abi_text(note.abi_major, note.abi_minor) + "; this host provides " +
                            abi_text(host.abi_major, host.abi_minor_max));
  }
}

std::string list_text(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + "]";
}

// Everything check() and load() verify before mapping: returns the sealed copy.
SealedPlugin check_against_entry(const LockEntry& entry, const fs::path& state_dir,
                                 const ctx_host_negotiation& host, Copy copy) {
  const std::string label = entry.label();
  if (entry.platform != current_platform()) {
    throw PluginIdentityMismatch("plugin " + label + " is pinned for platform " + entry.platform +
                                 "; this host is " + current_platform());
  }
  if (const std::string problem = detail::path_problem(entry.path); !problem.empty()) {
    throw UnsafePluginFile("plugin " + label + ": path " + problem);
  }
  if (detail::path_is_within(entry.path, state_dir.string())) {
    throw UnsafePluginFile("plugin " + label + ": path " + entry.path +
                           " is inside the state directory " + state_dir.string() +
                           "; pin the plugin where it is installed");
  }
  SealedPlugin plugin = read_sealed(entry.path, entry.size, label, copy);
  if (plugin.sha256 != entry.sha256) throw PluginDigestMismatch(label, entry.sha256, plugin.sha256);
  parse_sealed(plugin, label);
  check_loadable(plugin, label);
  if (*plugin.note != entry.identity()) {
    throw PluginNoteMismatch("plugin " + label + ": its identity note declares " +
                             identity_text(*plugin.note) + "; the lock pins " +
                             identity_text(entry.identity()));
  }
  check_note_abi(*plugin.note, host, label);
  if (plugin.elf.needed != entry.needed) {
    throw UnsafeDependency("plugin " + label + " needs " + list_text(plugin.elf.needed) +
                           "; the lock records " + list_text(entry.needed));
  }
  return plugin;
}

// Reads a descriptor string defensively (bounded, may be null).
std::string descriptor_text(const char* text) {
  if (text == nullptr) return {};
  return std::string(text, ::strnlen(text, kMaxDescriptorText));
}

// Applies the version rule of plugin_abi.h and validates the descriptor and the ops table of its
// kind. Returns the declared identity (sha256 left empty). `file` names the plugin until its id
// is known to be valid.
PluginIdentity validate_descriptor(const ctx_plugin_descriptor* d, const ctx_host_negotiation& host,
                                   const std::string& file) {
  if (d == nullptr) throw BrokenPluginTable("plugin " + file + " returned a null descriptor");
  const std::string declared_id =
      descriptor_text(d->struct_size >= CTX_TABLE_END(ctx_plugin_descriptor, id) ? d->id : nullptr);
  const std::string name = is_valid_plugin_id(declared_id) ? "\"" + declared_id + "\"" : file;

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
#define CTX_REQUIRE_OP(table, type, field)                   \
  do {                                                       \
    if ((table)->struct_size < CTX_TABLE_END(type, field)) { \
      throw too_small((table)->struct_size, #field);         \
    }                                                        \
    if ((table)->field == nullptr) throw null_op(#field);    \
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
  identity.abi_minor = d->abi_minor_required;
  return identity;
}

// Maps the sealed copy through Boost.DLL under a name no loaded object has, negotiates and
// validates. `expected` (the note, and the lock) must equal what the entry returns.
std::shared_ptr<const LoadedPlugin> map_sealed(SealedPlugin&& plugin, const std::string& file,
                                               const ctx_host_negotiation& host,
                                               const std::optional<PluginIdentity>& pinned) {
  const std::optional<PluginIdentity> note = plugin.note;
  auto library = std::make_unique<LoadedPlugin::Library>();
  library->memfd = std::move(plugin.sealed.memfd);
  library->name = "/proc/self/fd/" + std::to_string(library->memfd.get());
  // glibc matches dlopen names against loaded objects before opening anything: if this name is
  // taken (an earlier object kept resident), move the memfd to a fresh descriptor number.
  for (int attempt = 0;; ++attempt) {
    void* taken = ::dlopen(library->name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (taken == nullptr) break;
    ::dlclose(taken);
    if (attempt == 64) throw PluginLoadFailed("plugin " + file + ": no unused descriptor name");
    UniqueFd fresh(::fcntl(library->memfd.get(), F_DUPFD_CLOEXEC, library->memfd.get() + 1));
    if (!fresh) throw SystemError("cannot duplicate the plugin memfd: " + errno_text(errno));
    static_cast<void>(library->memfd.release());  // the old number stays taken on purpose
    library->memfd = std::move(fresh);
    library->name = "/proc/self/fd/" + std::to_string(library->memfd.get());
  }
  try {
    library->library.load(fs::path(library->name),
                          boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
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
  identity.sha256 = plugin.sha256;
  if (note && identity != *note) {
    throw PluginNoteMismatch("plugin " + file + ": its entry returned " + identity_text(identity) +
                             " but its identity note declares " + identity_text(*note));
  }
  if (pinned && identity != *pinned) {
    throw PluginIdentityMismatch("plugin " + file + " declares " + identity_text(identity) +
                                 "; the lock pins " + identity_text(*pinned));
  }
  return std::make_shared<const LoadedPlugin>(std::move(library), descriptor, std::move(identity));
}

}  // namespace

ctx_host_negotiation host_negotiation() noexcept {
  return ctx_host_negotiation{sizeof(ctx_host_negotiation), CTX_ABI_MAJOR, 0, CTX_ABI_MINOR};
}

void require_safe_loader_environment() {
  for (const std::string_view name : kLoaderVariables) {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0') continue;
    const char* allow = std::getenv("CTX_ALLOW_LOADER_ENV");
    if (allow != nullptr && std::string_view(allow) == "1") {
      std::cerr << "ctx: warning: " << name
                << " is set; loading plugins anyway because CTX_ALLOW_LOADER_ENV=1 (libraries "
                   "it names are not pinned)\n";
      return;
    }
    throw LoaderEnvironmentRefused(
        "refusing to load plugins while " + std::string(name) +
        " is set: it makes the dynamic loader run or find libraries that are not pinned; unset "
        "it, or set CTX_ALLOW_LOADER_ENV=1 for a sanitizer or debugger run");
  }
}

void require_trusted_directory(const std::filesystem::path& dir, std::string_view what,
                               bool missing_ok) {
  try {
    detail::open_trusted_dir(detail::absolute_normal(dir), detail::Owners::kRootOrUs, what);
  } catch (const PluginFileNotFound&) {
    if (!missing_ok) throw;
  }
}

LoadedPlugin::LoadedPlugin(std::unique_ptr<Library> library,
                           const ctx_plugin_descriptor* descriptor, PluginIdentity identity)
    : library_(std::move(library)), descriptor_(descriptor), identity_(std::move(identity)) {
  CTX_CHECK(library_ != nullptr && descriptor_ != nullptr);
}

LoadedPlugin::~LoadedPlugin() = default;

const std::string& LoadedPlugin::library_path() const noexcept { return library_->name; }

const ctx_verifier_ops* LoadedPlugin::verifier_ops() const noexcept {
  return kind() == PluginKind::kVerifier ? static_cast<const ctx_verifier_ops*>(descriptor_->ops)
                                         : nullptr;
}

const ctx_installer_ops* LoadedPlugin::installer_ops() const noexcept {
  return kind() == PluginKind::kInstaller ? static_cast<const ctx_installer_ops*>(descriptor_->ops)
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
    : state_dir_(detail::absolute_normal(state_dir)), host_(host) {
  CTX_CHECK(host_.abi_minor_min <= host_.abi_minor_max);
}

std::shared_ptr<const LoadedPlugin> PluginLoader::load(const LockEntry& entry) const {
  require_safe_loader_environment();
  SealedPlugin plugin = check_against_entry(entry, state_dir_, host_, Copy::kSealedMemfd);
  return map_sealed(std::move(plugin), entry.label() + " (" + entry.path + ")", host_,
                    entry.identity());
}

PluginIdentity PluginLoader::check(const LockEntry& entry) const {
  const SealedPlugin plugin = check_against_entry(entry, state_dir_, host_, Copy::kPrivateBuffer);
  return *plugin.note;
}

LockEntry PluginLoader::inspect_for_pin(const std::filesystem::path& file) const {
  const std::string path = detail::absolute_normal(file);
  if (detail::path_is_within(path, state_dir_.string())) {
    throw UnsafePluginFile("plugin file " + path + " is inside the state directory " +
                           state_dir_.string() + "; pin the plugin where it is installed");
  }
  SealedPlugin plugin = read_sealed(path, std::nullopt, path, Copy::kPrivateBuffer);
  check_loadable(plugin, path);
  const PluginIdentity& identity = *plugin.note;
  check_note_abi(identity, host_, path);
  LockEntry entry;
  entry.kind = identity.kind;
  entry.id = identity.id;
  entry.version = identity.version;
  entry.sha256 = plugin.sha256;
  entry.size = plugin.size;
  entry.abi_major = identity.abi_major;
  entry.abi_minor = identity.abi_minor;
  entry.needed = plugin.elf.needed;
  entry.platform = current_platform();
  entry.path = path;
  return entry;
}

}  // namespace ctx::plugins
