// The YAML frontmatter of SKILL.md and agent files as read_catalog reads it (catalog_read.cpp;
// docs/catalog.md): the keys ctx uses, every other key ignored as the hosts ignore it. Internal to
// the catalog reader. Pure functions; thread-safe.
#ifndef CTX_HOST_RUNTIME_CATALOG_CATALOG_FRONTMATTER_HPP_
#define CTX_HOST_RUNTIME_CATALOG_CATALOG_FRONTMATTER_HPP_

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

namespace ctx::runtime::detail {

// A rule broken by the file being read; caught per file and recorded as a CatalogProblem.
struct Broken {
  std::string rule;
};

// Splits "---\n<yaml>\n---\n<body>" (a UTF-8 byte-order mark and CRLF line ends allowed) and
// parses the YAML mapping. Errors: Broken naming the rule.
YAML::Node frontmatter(const std::string& text);

// A list of strings, or one string split on commas and whitespace; nullopt when neither.
std::optional<std::vector<std::string>> yaml_string_list(const YAML::Node& node);

// The frontmatter keys ctx uses; every other key is ignored, as the hosts ignore it.
struct FrontmatterFields {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::string when_to_use;
  std::vector<std::string> tags;
  std::optional<YAML::Node> tools;
};

// The fields of `text`'s frontmatter. Errors: Broken (no frontmatter, not YAML, not a mapping, a
// repeated key, a name or description that is not a string).
FrontmatterFields read_frontmatter(const std::string& text);

}  // namespace ctx::runtime::detail

#endif  // CTX_HOST_RUNTIME_CATALOG_CATALOG_FRONTMATTER_HPP_
