#include "host/plugins/plugin_identity.hpp"

#include <ctx/abi/plugin_abi.h>
#include <ctx/sdk/error.hpp>

#include <regex>

namespace ctx::plugins {

static_assert(static_cast<std::uint32_t>(PluginKind::kInstaller) == CTX_KIND_INSTALLER);
static_assert(static_cast<std::uint32_t>(PluginKind::kVerifier) == CTX_KIND_VERIFIER);
static_assert(static_cast<std::uint32_t>(PluginKind::kHostAdapter) == CTX_KIND_HOST_ADAPTER);

std::string_view kind_name(PluginKind kind) noexcept {
  switch (kind) {
    case PluginKind::kInstaller: return "installer";
    case PluginKind::kVerifier: return "verifier";
    case PluginKind::kHostAdapter: return "host-adapter";
  }
  return "unknown";
}

PluginKind parse_kind(std::string_view name) {
  if (name == "installer") return PluginKind::kInstaller;
  if (name == "verifier") return PluginKind::kVerifier;
  if (name == "host-adapter") return PluginKind::kHostAdapter;
  throw InvalidArgument("unknown plugin kind \"" + std::string(name) + "\"");
}

bool is_known_kind(std::uint32_t value) noexcept {
  return value == CTX_KIND_INSTALLER || value == CTX_KIND_VERIFIER ||
         value == CTX_KIND_HOST_ADAPTER;
}

bool is_valid_plugin_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 64) return false;
  const auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(id.front())) return false;
  for (const char c : id.substr(1)) {
    if (!lower_or_digit(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

bool is_valid_semver(std::string_view version) noexcept {
  if (version.empty() || version.size() > 64) return false;
  // semver.org's recommended expression.
  static const std::regex kSemver(
      R"(^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*))"
      R"((?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?)"
      R"((?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$)");
  try {
    return std::regex_match(version.begin(), version.end(), kSemver);
  } catch (...) {
    return false;
  }
}

std::string current_platform() {
#if defined(__linux__)
  std::string os = "linux";
#elif defined(__APPLE__)
  std::string os = "darwin";
#else
  std::string os = "unknown";
#endif
#if defined(__x86_64__)
  return os + "-x86_64";
#elif defined(__aarch64__)
  return os + "-aarch64";
#elif defined(__i386__)
  return os + "-x86";
#elif defined(__arm__)
  return os + "-arm";
#else
  return os + "-unknown";
#endif
}

std::string plugin_label(PluginKind kind, std::string_view id) {
  return std::string(kind_name(kind)) + ":" + std::string(id);
}

core::Json PluginIdentity::to_json() const {
  return core::Json{{"abi", {{"major", abi_major}, {"minor", abi_minor}}},
                    {"id", id},
                    {"kind", std::string(kind_name(kind))},
                    {"sha256", sha256},
                    {"version", version}};
}

std::string PluginIdentity::digest() const { return core::canonical_digest(to_json()); }

}  // namespace ctx::plugins
