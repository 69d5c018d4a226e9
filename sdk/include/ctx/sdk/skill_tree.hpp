// File: ctx/sdk/skill_tree.hpp
//
// The content address of a directory-tree skill (SKILL.md plus resource files), header-only so
// the host (catalog import, install execution) and installer plugins spell the two canonical
// texts plugin_abi.h ("Tree material") states. Thread-safe (pure functions).
//
// The manifest (schema "ctx.skill-tree-v1") lists every file:
//   {"files":[{"bytes":<n>,"path":"<relative path>","sha256":"<hex>"},...],
//    "schema":"ctx.skill-tree-v1"}
// files sorted bytewise by path, each path unique; "SKILL.md" at the top level is required.
// The tree root (schema "ctx.skill-tree-root-v1") is the tree's material: fixed-size whatever
// the tree holds, so every tree within the shared bounds below fits the engine's 6000-byte
// MaterialIdentity bound:
//   {"bytes":<all files' bytes together>,"files":<file count>,
//    "manifest_sha256":"<hex sha-256 of the manifest text>","schema":"ctx.skill-tree-root-v1"}
// content_sha256 = sha256 of the root text (the tree digest), content_bytes = its length (at
// most kMaxTreeRootChars). The manifest travels beside the root (the installer's "manifest"
// request field): each file is checked against its manifest entry, the manifest against the
// root's manifest_sha256, the root against the authorised content digest.
// A plain skill (one top-level SKILL.md of at most kMaxPlainSkillBytes) keeps the plain form
// instead: its material is the SKILL.md bytes themselves (is_plain_skill).
// An agent file (agents/<name>.md) over the same bound travels the same way, as a one-file tree
// whose only file is named kAgentFile ("AGENT.md"): the manifest lists that one file, the root
// over it is the agent's material (tree_manifest_text(files, kAgentFile)); an agent of at most
// kMaxPlainSkillBytes keeps the plain form (its file's bytes).
// Every string in either text is ASCII without characters JSON escapes (the path and digest rules
// below), so both are canonical JSON (keys bytewise sorted, compact) spelled directly.
#ifndef CTX_SDK_SKILL_TREE_HPP_
#define CTX_SDK_SKILL_TREE_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ctx/sdk/error.hpp>
#include <ctx/support/text.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::sdk {

inline constexpr std::string_view kSkillTreeSchema = "ctx.skill-tree-v1";
inline constexpr std::string_view kSkillTreeRootSchema = "ctx.skill-tree-root-v1";
// The longest root text: both counts at 20 digits.
inline constexpr std::size_t kMaxTreeRootChars = 178;
// The largest SKILL.md that keeps the plain form: the engine's MaterialIdentity content bound
// (engine spec, MaterialIdentity: content_bytes 1..6000). A larger SKILL.md-only skill is a
// one-file tree.
inline constexpr std::uint64_t kMaxPlainSkillBytes = 6000;
inline constexpr char kSkillFile[] = "SKILL.md";
// The one file of an agent's tree (above).
inline constexpr char kAgentFile[] = "AGENT.md";
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
using ::ctx::support::is_ascii_alnum;
using ::ctx::support::is_sha256_hex;
}  // namespace skill_tree_internal

// True for a path component a tree may hold: [A-Za-z0-9_][A-Za-z0-9._-]{0,127} (so never ".",
// "..", a hidden name or anything with a separator or a NUL).
inline bool is_tree_component(std::string_view component) noexcept {
  using skill_tree_internal::is_ascii_alnum;
  if (component.empty() || component.size() > kMaxTreeComponentChars) return false;
  if (!is_ascii_alnum(component.front()) && component.front() != '_') return false;
  return std::all_of(component.begin(), component.end(),
                     [](char c) { return is_ascii_alnum(c) || c == '.' || c == '_' || c == '-'; });
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

// The canonical manifest text of `files` (sorted here), a tree whose top-level `top_file` is
// required (kSkillFile for a skill, kAgentFile for an agent).
// Errors: InvalidArgument when a path is invalid or repeated, a digest is not lower-case hex
// SHA-256, or `top_file` is missing.
inline std::string tree_manifest_text(std::vector<TreeFile> files,
                                      std::string_view top_file = kSkillFile) {
  std::sort(files.begin(), files.end(),
            [](const TreeFile& a, const TreeFile& b) { return a.path < b.path; });
  bool has_top = false;
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
    has_top = has_top || file.path == top_file;
    if (i > 0) text += ',';
    text += "{\"bytes\":" + std::to_string(file.bytes) + ",\"path\":\"" + file.path +
            "\",\"sha256\":\"" + file.sha256 + "\"}";
  }
  if (!has_top) {
    throw InvalidArgument(
        (top_file == kSkillFile ? "skill tree has no top-level " : "agent tree has no top-level ") +
        std::string(top_file));
  }
  text += "],\"schema\":\"";
  text += kSkillTreeSchema;
  text += "\"}";
  return text;
}

// True when `files` is a plain skill: exactly one file, the top-level SKILL.md, of
// 1..kMaxPlainSkillBytes bytes. Anything else is tree material.
inline bool is_plain_skill(const std::vector<TreeFile>& files) noexcept {
  return files.size() == 1 && files.front().path == kSkillFile && files.front().bytes >= 1 &&
         files.front().bytes <= kMaxPlainSkillBytes;
}

// The tree root text of a tree of `files` files holding `bytes` bytes together whose manifest
// text hashes to `manifest_sha256`.
// Errors: InvalidArgument when `files` is 0 or `manifest_sha256` is not lower-case hex SHA-256.
inline std::string tree_root_text(std::uint64_t bytes, std::uint64_t files,
                                  std::string_view manifest_sha256) {
  if (files == 0) throw InvalidArgument("skill tree root needs at least one file");
  if (!skill_tree_internal::is_sha256_hex(manifest_sha256)) {
    throw InvalidArgument("skill tree root manifest digest is not a lower-case sha-256 digest");
  }
  std::string text = "{\"bytes\":" + std::to_string(bytes) +
                     ",\"files\":" + std::to_string(files) + ",\"manifest_sha256\":\"";
  text += manifest_sha256;
  text += "\",\"schema\":\"";
  text += kSkillTreeRootSchema;
  text += "\"}";
  return text;
}

// The root text of the tree `files` whose manifest text (tree_manifest_text(files)) hashes to
// `manifest_sha256`: the byte total and count taken from `files`.
// Errors: InvalidArgument as tree_root_text.
inline std::string tree_root_text(const std::vector<TreeFile>& files,
                                  std::string_view manifest_sha256) {
  std::uint64_t bytes = 0;
  for (const TreeFile& file : files) bytes += file.bytes;
  return tree_root_text(bytes, files.size(), manifest_sha256);
}

}  // namespace ctx::sdk

#endif  // CTX_SDK_SKILL_TREE_HPP_
