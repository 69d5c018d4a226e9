#include "host/runtime/catalog/catalog_frontmatter.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include "host/engine/lexical.hpp"

namespace ctx::runtime::detail {

// Splits "---\n<yaml>\n---\n<body>" (a UTF-8 byte-order mark and CRLF line ends allowed) and
// parses the YAML mapping.
YAML::Node frontmatter(const std::string& text) {
  std::string_view view(text);
  if (view.substr(0, 3) == "\xEF\xBB\xBF") view.remove_prefix(3);
  auto first_line_end = view.find('\n');
  if (first_line_end == std::string_view::npos)
    throw Broken{"file must start with a --- frontmatter line"};
  std::string_view first = view.substr(0, first_line_end);
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  while (!first.empty() && (first.back() == ' ' || first.back() == '\t')) first.remove_suffix(1);
  if (first != "---") throw Broken{"file must start with a --- frontmatter line"};
  std::size_t pos = first_line_end + 1;
  std::optional<std::size_t> end;
  while (pos <= view.size()) {
    std::size_t next = view.find('\n', pos);
    std::string_view line =
        view.substr(pos, next == std::string_view::npos ? view.size() - pos : next - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line == "---") {
      end = pos;
      break;
    }
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  if (!end) throw Broken{"frontmatter must end with a --- line"};
  std::string yaml(view.substr(first_line_end + 1, *end - first_line_end - 1));
  // yaml-cpp reads CR LF line ends, but a CR left inside a block scalar would stay in the text.
  yaml.erase(std::remove(yaml.begin(), yaml.end(), '\r'), yaml.end());
  YAML::Node node;
  try {
    node = YAML::Load(yaml);
  } catch (const YAML::Exception&) {
    throw Broken{"frontmatter is not valid YAML"};
  }
  if (!node.IsMap()) throw Broken{"frontmatter must be a YAML mapping"};
  return node;
}

// A list of strings, or one string split on commas and whitespace; nullopt when neither.
std::optional<std::vector<std::string>> yaml_string_list(const YAML::Node& node) {
  std::vector<std::string> out;
  if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsScalar()) return std::nullopt;
      out.push_back(item.Scalar());
    }
    return out;
  }
  if (!node.IsScalar()) return std::nullopt;
  std::string current;
  for (char c : node.Scalar() + ",") {
    if (c == ',' || c == ' ' || c == '\t') {
      if (!current.empty()) out.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  return out;
}

FrontmatterFields read_frontmatter(const std::string& text) {
  const YAML::Node node = frontmatter(text);
  FrontmatterFields out;
  std::set<std::string> seen;
  for (const auto& item : node) {
    if (!item.first.IsScalar()) continue;  // a key no host reads
    const std::string key = item.first.Scalar();
    if (!seen.insert(key).second) throw Broken{"frontmatter repeats a key"};
    const YAML::Node& value = item.second;
    if (key == "name") {
      if (!value.IsScalar()) throw Broken{"name must be a string"};
      out.name = value.Scalar();
    } else if (key == "description") {
      if (!value.IsScalar()) throw Broken{"description must be a string"};
      out.description = value.Scalar();
    } else if (key == "when_to_use") {
      if (value.IsScalar() && engine::is_valid_unicode(value.Scalar())) {
        out.when_to_use = value.Scalar();
      }
    } else if (key == "metadata") {
      if (value.IsMap() && value["tags"]) {
        if (auto tags = yaml_string_list(value["tags"])) out.tags = std::move(*tags);
      }
    } else if (key == "tools") {
      out.tools = value;
    }
  }
  return out;
}

}  // namespace ctx::runtime::detail
