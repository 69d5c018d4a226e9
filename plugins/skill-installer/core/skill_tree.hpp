// The skill tree manifest: the content address of a directory-tree skill (SKILL.md plus resource
// files). Its canonical text is the tree's material; plugin_abi.h ("Tree material") states the
// schema the engine and the conformance kit rely on. Thread-safe (pure values and functions).
//
//   {"files":[{"bytes":<n>,"path":"<relative path>","sha256":"<hex>"},...],
//    "schema":"ctx.skill-tree-v1"}
// files sorted bytewise by path, each path unique; "SKILL.md" at the top level is required.
#ifndef CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_TREE_HPP_
#define CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_TREE_HPP_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::skill_installer {

inline constexpr std::string_view kTreeSchema = "ctx.skill-tree-v1";
inline constexpr char kSkillFile[] = "SKILL.md";
inline constexpr std::size_t kMaxTreeDepth = 8;

// One file of a tree: relative '/'-separated path, byte count, lower-case hex SHA-256.
struct TreeFile {
  std::string path;
  std::uint64_t bytes = 0;
  std::string sha256;
  friend bool operator==(const TreeFile&, const TreeFile&) = default;
};

// True for a path component the store accepts: [A-Za-z0-9_][A-Za-z0-9._-]{0,127} (so never ".",
// "..", a hidden name or anything with a separator or a NUL).
bool is_tree_component(std::string_view component) noexcept;

// True for a relative path of 1..kMaxTreeDepth valid components joined by single '/'.
bool is_tree_path(std::string_view path) noexcept;

// The canonical manifest text of `files` (sorted here). Errors: InvalidArgument when a path is
// invalid or repeated, or SKILL.md is missing.
std::string tree_manifest_text(std::vector<TreeFile> files);

}  // namespace ctx::skill_installer

#endif  // CTX_PLUGINS_SKILL_INSTALLER_CORE_SKILL_TREE_HPP_
