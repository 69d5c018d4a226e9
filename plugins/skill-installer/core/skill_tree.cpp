#include "plugins/skill-installer/core/skill_tree.hpp"

#include <algorithm>
#include <ctx/sdk/error.hpp>
#include <nlohmann/json.hpp>

namespace ctx::skill_installer {
namespace {

bool is_alnum(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

bool is_tree_component(std::string_view component) noexcept {
  if (component.empty() || component.size() > 128) return false;
  if (!is_alnum(component.front()) && component.front() != '_') return false;
  return std::all_of(component.begin(), component.end(), [](char c) {
    return is_alnum(c) || c == '.' || c == '_' || c == '-';
  });
}

bool is_tree_path(std::string_view path) noexcept {
  std::size_t depth = 0;
  while (true) {
    const std::size_t slash = path.find('/');
    if (!is_tree_component(path.substr(0, slash))) return false;
    if (++depth > kMaxTreeDepth) return false;
    if (slash == std::string_view::npos) return true;
    path.remove_prefix(slash + 1);
  }
}

std::string tree_manifest_text(std::vector<TreeFile> files) {
  std::sort(files.begin(), files.end(),
            [](const TreeFile& a, const TreeFile& b) { return a.path < b.path; });
  bool has_skill = false;
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!is_tree_path(files[i].path)) throw InvalidArgument("skill tree has an invalid file path");
    if (i > 0 && files[i].path == files[i - 1].path) {
      throw InvalidArgument("skill tree lists a file path twice");
    }
    has_skill = has_skill || files[i].path == kSkillFile;
    list.push_back(
        {{"bytes", files[i].bytes}, {"path", files[i].path}, {"sha256", files[i].sha256}});
  }
  if (!has_skill) throw InvalidArgument("skill tree has no top-level SKILL.md");
  // nlohmann orders object keys bytewise and dumps compactly; every string is ASCII here, so the
  // text is the canonical JSON plugin_abi.h states.
  return nlohmann::json{{"files", list}, {"schema", kTreeSchema}}.dump(-1, ' ', true);
}

}  // namespace ctx::skill_installer
