#include <ctx/abi/plugin_abi.h>

#include <algorithm>
#include <array>
#include <ctx/loader/plugin_identity.hpp>
#include <ctx/sdk/error.hpp>
#include <ctx/support/canonical_json.hpp>
#include <ctx/support/text.hpp>
#include <utility>

namespace ctx::plugins {

static_assert(static_cast<std::uint32_t>(PluginKind::kInstaller) == CTX_KIND_INSTALLER);
static_assert(static_cast<std::uint32_t>(PluginKind::kVerifier) == CTX_KIND_VERIFIER);
static_assert(static_cast<std::uint32_t>(PluginKind::kHostAdapter) == CTX_KIND_HOST_ADAPTER);

namespace {

// The plugin kinds' spellings (lock files, CLI, messages), defined once.
constexpr std::array<std::pair<PluginKind, std::string_view>, 3> kPluginKindStrings{
    {{PluginKind::kInstaller, "installer"},
     {PluginKind::kVerifier, "verifier"},
     {PluginKind::kHostAdapter, "host-adapter"}}};

}  // namespace

std::string_view kind_name(PluginKind kind) noexcept {
  for (const auto& [value, name] : kPluginKindStrings) {
    if (value == kind) return name;
  }
  return "unknown";
}

PluginKind parse_kind(std::string_view name) {
  for (const auto& [kind, spelled] : kPluginKindStrings) {
    if (spelled == name) return kind;
  }
  throw InvalidArgument("unknown plugin kind \"" + std::string(name) + "\"");
}

bool is_known_kind(std::uint32_t value) noexcept {
  return value == CTX_KIND_INSTALLER || value == CTX_KIND_VERIFIER ||
         value == CTX_KIND_HOST_ADAPTER;
}

bool is_valid_plugin_id(std::string_view id) noexcept { return support::is_plugin_id(id); }

namespace {

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_identifier_char(char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

// Splits `text` at the first of `stops` (or its end) into [head, rest) and returns head.
std::string_view take_until(std::string_view& text, std::string_view stops) noexcept {
  const std::size_t at = std::min(text.find_first_of(stops), text.size());
  const std::string_view head = text.substr(0, at);
  text.remove_prefix(at);
  return head;
}

// 0 | [1-9][0-9]*
bool is_numeric_identifier(std::string_view part) noexcept {
  if (part.empty() || (part.size() > 1 && part.front() == '0')) return false;
  for (const char c : part) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// Dot-separated non-empty [0-9A-Za-z-]+ identifiers; with `prerelease`, an all-digit one is a
// numeric identifier (no leading zero).
bool is_identifier_list(std::string_view list, bool prerelease) noexcept {
  for (;;) {
    const std::string_view part = take_until(list, ".");
    if (part.empty()) return false;
    bool digits_only = true;
    for (const char c : part) {
      if (!is_identifier_char(c)) return false;
      digits_only = digits_only && is_digit(c);
    }
    if (prerelease && digits_only && !is_numeric_identifier(part)) return false;
    if (list.empty()) return true;
    list.remove_prefix(1);  // the dot
  }
}

}  // namespace

// semver.org's grammar (the same language as its recommended expression), by hand: std::regex
// costs milliseconds to compile, on every cold start that reads a lock file.
bool is_valid_semver(std::string_view version) noexcept {
  if (version.empty() || version.size() > 64) return false;
  std::string_view rest = version;
  for (int i = 0; i < 3; ++i) {
    if (!is_numeric_identifier(take_until(rest, i < 2 ? "." : "-+"))) return false;
    if (i < 2) {
      if (rest.empty()) return false;
      rest.remove_prefix(1);  // the dot
    }
  }
  if (!rest.empty() && rest.front() == '-') {
    rest.remove_prefix(1);
    if (!is_identifier_list(take_until(rest, "+"), true)) return false;
  }
  if (!rest.empty()) {  // '+' here
    rest.remove_prefix(1);
    if (!is_identifier_list(rest, false)) return false;
  }
  return true;
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

Json PluginIdentity::to_json() const {
  return Json{{"abi", {{"major", abi_major}, {"minor", abi_minor}}},
              {"id", id},
              {"kind", std::string(kind_name(kind))},
              {"sha256", sha256},
              {"version", version}};
}

std::string PluginIdentity::digest() const { return support::canonical_digest(to_json()); }

}  // namespace ctx::plugins
