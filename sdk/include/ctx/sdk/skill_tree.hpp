// File: ctx/sdk/skill_tree.hpp
//
// The skill tree manifest: the content address of a directory-tree skill (SKILL.md plus resource
// files), header-only so the host (catalog import, install execution) and installer plugins build
// the one canonical text plugin_abi.h ("Tree material") states. Its text is the tree's material:
// content_sha256 = sha256 of the text, content_bytes = its length. Thread-safe (pure functions).
//
//   {"files":[{"bytes":<n>,"path":"<relative path>","sha256":"<hex>"},...],
//    "schema":"ctx.skill-tree-v1"}
// files sorted bytewise by path, each path unique; "SKILL.md" at the top level is required.
// Every string in it is ASCII without characters JSON escapes (the path and digest rules below),
// so the text is canonical JSON (keys bytewise sorted, compact) spelled directly.
#ifndef CTX_SDK_SKILL_TREE_HPP_
#define CTX_SDK_SKILL_TREE_HPP_

#include <ctx/sdk/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::sdk {

inline constexpr std::string_view kSkillTreeSchema = "ctx.skill-tree-v1";
inline constexpr char kSkillFile[] = "SKILL.md";
inline constexpr std::size_t kMaxTreeDepth = 8;
inline constexpr std::size_t kMaxTreeComponentChars = 128;

// The size bounds of one tree that the host and installers share, so that every tree the host's
// catalog imports is one the skill-installer's default caps accept (and nothing imports that
// installs only under raised caps): one file (SKILL.md or a resource) at most kMaxTreeFileBytes,
// all files together at most kMaxTreeBytes, at most kMaxTreeFiles files. The catalog refuses a
// skill over any of them at import; the skill-installer's max_file_bytes / max_tree_bytes /
// max_files default to them (a config may lower them).
inline constexpr std::uint64_t kMaxTreeFileBytes = 16ull << 20;  // 16 MiB
inline constexpr std::uint64_t kMaxTreeBytes = 64ull << 20;      // 64 MiB
inline constexpr std::size_t kMaxTreeFiles = 1000;

// One file of a tree: relative '/'-separated path, byte count, lower-case hex SHA-256.
struct TreeFile {
  std::string path;
  std::uint64_t bytes = 0;
  std::string sha256;
  friend bool operator==(const TreeFile&, const TreeFile&) = default;
};

namespace skill_tree_internal {
inline bool is_alnum(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
inline bool is_sha256_hex(std::string_view text) noexcept {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}
}  // namespace skill_tree_internal

// True for a path component a tree may hold: [A-Za-z0-9_][A-Za-z0-9._-]{0,127} (so never ".",
// "..", a hidden name or anything with a separator or a NUL).
inline bool is_tree_component(std::string_view component) noexcept {
  using skill_tree_internal::is_alnum;
  if (component.empty() || component.size() > kMaxTreeComponentChars) return false;
  if (!is_alnum(component.front()) && component.front() != '_') return false;
  return std::all_of(component.begin(), component.end(), [](char c) {
    return is_alnum(c) || c == '.' || c == '_' || c == '-';
  });
}

// True for a relative path of 1..kMaxTreeDepth valid components joined by single '/'.
inline bool is_tree_path(std::string_view path) noexcept {
  std::size_t depth = 0;
  while (true) {
    const std::size_t slash = path.find('/');
    if (!is_tree_component(path.substr(0, slash))) return false;
    if (++depth > kMaxTreeDepth) return false;
    if (slash == std::string_view::npos) return true;
    path.remove_prefix(slash + 1);
  }
}

// The canonical manifest text of `files` (sorted here).
// Errors: InvalidArgument when a path is invalid or repeated, a digest is not lower-case hex
// SHA-256, or SKILL.md is missing.
inline std::string tree_manifest_text(std::vector<TreeFile> files) {
  std::sort(files.begin(), files.end(),
            [](const TreeFile& a, const TreeFile& b) { return a.path < b.path; });
  bool has_skill = false;
  std::string text = "{\"files\":[";
  for (std::size_t i = 0; i < files.size(); ++i) {
    const TreeFile& file = files[i];
    if (!is_tree_path(file.path)) throw InvalidArgument("skill tree has an invalid file path");
    if (i > 0 && file.path == files[i - 1].path) {
      throw InvalidArgument("skill tree lists a file path twice");
    }
    if (!skill_tree_internal::is_sha256_hex(file.sha256)) {
      throw InvalidArgument("skill tree file digest is not a lower-case sha-256 digest");
    }
    has_skill = has_skill || file.path == kSkillFile;
    if (i > 0) text += ',';
    text += "{\"bytes\":" + std::to_string(file.bytes) + ",\"path\":\"" + file.path +
            "\",\"sha256\":\"" + file.sha256 + "\"}";
  }
  if (!has_skill) throw InvalidArgument("skill tree has no top-level SKILL.md");
  text += "],\"schema\":\"";
  text += kSkillTreeSchema;
  text += "\"}";
  return text;
}

}  // namespace ctx::sdk

#endif  // CTX_SDK_SKILL_TREE_HPP_
