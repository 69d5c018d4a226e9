// Plugin kinds and PluginIdentity: the exact file bytes (sha256) plus what the plugin declares
// (kind, id, version, ABI). The identity digest is what engine events and bindings record.
// Thread-safety: pure functions and immutable values.
#ifndef CTX_LOADER_PLUGIN_IDENTITY_HPP_
#define CTX_LOADER_PLUGIN_IDENTITY_HPP_

#include <cstdint>
#include <ctx/support/canonical_json.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ctx::plugins {

// JSON values of the loader (lock entries, identities): nlohmann's, as everywhere in ctx.
using Json = nlohmann::json;

// Values equal the ABI's CTX_KIND_*; persisted: never renumber.
enum class PluginKind : std::uint32_t { kInstaller = 1, kVerifier = 2, kHostAdapter = 3 };

// "installer" | "verifier" | "host-adapter".
std::string_view kind_name(PluginKind kind) noexcept;

// Inverse of kind_name. Errors: InvalidArgument ("unknown plugin kind").
PluginKind parse_kind(std::string_view name);

// True for a CTX_KIND_* value.
bool is_known_kind(std::uint32_t value) noexcept;

// True for a plugin id token: [a-z0-9][a-z0-9._-]{0,63}.
bool is_valid_plugin_id(std::string_view id) noexcept;

// True for a semantic version MAJOR.MINOR.PATCH[-pre][+build] (semver 2.0), at most 64 chars.
bool is_valid_semver(std::string_view version) noexcept;

// The platform this host runs on, as lock entries spell it ("linux-x86_64", "linux-aarch64").
std::string current_platform();

// "kind:id", how messages name a plugin.
std::string plugin_label(PluginKind kind, std::string_view id);

struct PluginIdentity {
  PluginKind kind = PluginKind::kInstaller;
  std::string id;
  std::string version;
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;  // the minor the plugin requires (its note's abi.minor)
  std::string sha256;           // of the exact file bytes, lower-case hex

  // {"abi":{"major","minor"},"id","kind","sha256","version"}.
  Json to_json() const;
  // canonical_digest(to_json()): the identity digest.
  std::string digest() const;
  // "kind:id".
  std::string label() const { return plugin_label(kind, id); }

  friend bool operator==(const PluginIdentity&, const PluginIdentity&) = default;
};

}  // namespace ctx::plugins

#endif  // CTX_LOADER_PLUGIN_IDENTITY_HPP_
