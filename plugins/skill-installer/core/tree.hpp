// Tree material as the skill store reads it (plugin_abi.h "Tree material"): the files below an
// installed object, hashed; the root text a file list implies; an install request's manifest,
// accepted only as its canonical text. Thread-compatible (no shared state).
#ifndef CTX_PLUGINS_SKILL_INSTALLER_CORE_TREE_HPP_
#define CTX_PLUGINS_SKILL_INSTALLER_CORE_TREE_HPP_

#include <cstddef>
#include <ctx/sdk/skill_tree.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ctx::skill_installer {

// Hashes one regular file `name` of `dir` as tree path `path`; nullopt when it cannot be read.
// Errors: ctx::Error kInternal when a read fails.
std::optional<sdk::TreeFile> hash_file(int dir, const std::string& name, const std::string& path);

// Collects the files below `dir` (tree paths under `prefix`, at `depth`) into `files`; false when
// something there is not a valid tree entry (a bad name, a symlink, too deep, unreadable).
bool collect_tree(int dir, const std::string& prefix, std::size_t depth,
                  std::vector<sdk::TreeFile>& files);

// The tree root text of `files`, or nullopt when they are not a tree (no top-level SKILL.md, an
// invalid or repeated path).
std::optional<std::string> tree_root_of(const std::vector<sdk::TreeFile>& files);

// The entries of an install request's "manifest": exactly the canonical manifest text of them.
// Errors: InvalidArgument when the text is not JSON, not a manifest, or not its canonical text.
std::vector<sdk::TreeFile> parse_manifest(const std::string& text);

}  // namespace ctx::skill_installer

#endif  // CTX_PLUGINS_SKILL_INSTALLER_CORE_TREE_HPP_
