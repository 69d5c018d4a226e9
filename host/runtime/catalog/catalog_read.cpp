// read_catalog: walks and validates a catalog directory (see catalog.hpp). Every rule failure is
// collected as one CatalogProblem per file; nothing here writes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <ctx/sdk/skill_tree.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/catalog/catalog.hpp"

namespace ctx::runtime {

// A plain skill's SKILL.md is its material: the plain bound is the engine's material bound.
static_assert(sdk::kMaxPlainSkillBytes ==
              static_cast<std::uint64_t>(engine::kMaxPreparedContentBytes));
static_assert(sdk::kMaxTreeRootChars <= sdk::kMaxPlainSkillBytes);

namespace {

namespace fs = std::filesystem;
using core::Json;

// A rule broken by the file being read; caught per file and recorded as a CatalogProblem.
struct Broken {
  std::string rule;
};

// Unrecoverable: the catalog as a whole cannot be read (recorded against `file`).
struct Fatal {
  CatalogProblem problem;
};

// Agent Skills name rule: 1–64 of [a-z0-9-], no leading/trailing '-', no "--".
bool is_entry_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameChars) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-' && name.find("--") == std::string_view::npos;
}

std::size_t utf8_chars(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

void check_description(const std::string& description, bool forbid_angle_brackets) {
  if (!engine::is_valid_unicode(description)) throw Broken{"description must be valid UTF-8"};
  const std::size_t chars = utf8_chars(description);
  if (chars == 0 || description.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Broken{"description must be 1-1024 characters"};
  }
  if (chars > kMaxDescriptionChars) throw Broken{"description must be 1-1024 characters"};
  if (forbid_angle_brackets && description.find_first_of("<>") != std::string::npos) {
    throw Broken{"description must not contain '<' or '>'"};
  }
}

// Explicit tags: each an entry name (1–64 of [a-z0-9-]); at most 32; returned sorted unique.
std::vector<std::string> check_tags(const std::vector<std::string>& tags) {
  if (tags.size() > kMaxExplicitTags) throw Broken{"tags must list at most 32 tags"};
  std::set<std::string> out;
  for (const auto& tag : tags) {
    if (!is_entry_name(tag)) throw Broken{"each tag must be 1-64 of [a-z0-9-]"};
    out.insert(tag);
  }
  return {out.begin(), out.end()};
}

// Reads a regular file without following a symlink, at most `limit` bytes.
std::string read_bounded(const fs::path& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) throw Broken{"symbolic links are not allowed in a catalog"};
    throw Broken{"file cannot be read"};
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw Broken{"must be a regular file"};
  if (static_cast<std::uint64_t>(st.st_size) > limit) {
    throw Broken{"file is larger than " + std::to_string(limit) + " bytes"};
  }
  std::string out;
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Broken{"file cannot be read"};
    done += static_cast<std::size_t>(n);
  }
  char extra = 0;
  if (::read(fd, &extra, 1) != 0) throw Broken{"file changed while it was read"};
  return out;
}

// Splits "---\n<yaml>\n---\n<body>" and parses the YAML mapping.
YAML::Node frontmatter(const std::string& text) {
  std::string_view view(text);
  if (view.substr(0, 3) == "\xEF\xBB\xBF")
    throw Broken{"file must not start with a byte-order mark"};
  auto first_line_end = view.find('\n');
  if (first_line_end == std::string_view::npos)
    throw Broken{"file must start with a --- frontmatter line"};
  std::string_view first = view.substr(0, first_line_end);
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  if (first != "---") throw Broken{"file must start with a --- frontmatter line"};
  std::size_t pos = first_line_end + 1;
  std::optional<std::size_t> end;
  while (pos <= view.size()) {
    std::size_t next = view.find('\n', pos);
    std::string_view line =
        view.substr(pos, next == std::string_view::npos ? view.size() - pos : next - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line == "---") {
      end = pos;
      break;
    }
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  if (!end) throw Broken{"frontmatter must end with a --- line"};
  const std::string yaml(view.substr(first_line_end + 1, *end - first_line_end - 1));
  YAML::Node node;
  try {
    node = YAML::Load(yaml);
  } catch (const YAML::Exception&) {
    throw Broken{"frontmatter is not valid YAML"};
  }
  if (!node.IsMap()) throw Broken{"frontmatter must be a YAML mapping"};
  return node;
}

std::string yaml_key(const YAML::Node& key) {
  if (!key.IsScalar()) throw Broken{"frontmatter keys must be strings"};
  return key.Scalar();
}

std::string yaml_string(const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) throw Broken{field + " must be a string"};
  return node.Scalar();
}

// A list of strings, or one string split on commas and whitespace.
std::vector<std::string> yaml_string_list(const YAML::Node& node, const std::string& field) {
  std::vector<std::string> out;
  if (node.IsSequence()) {
    for (const auto& item : node) out.push_back(yaml_string(item, field + " item"));
    return out;
  }
  if (!node.IsScalar()) throw Broken{field + " must be a list or a comma-separated string"};
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

struct FrontmatterFields {
  std::string name;
  std::string description;
  std::optional<YAML::Node> metadata;
  std::optional<YAML::Node> tools;
  std::string when_to_use;
};

FrontmatterFields read_frontmatter(const std::string& text,
                                   const std::set<std::string, std::less<>>& optional_keys) {
  const YAML::Node node = frontmatter(text);
  FrontmatterFields out;
  bool has_name = false;
  bool has_description = false;
  std::set<std::string> seen;
  for (const auto& item : node) {
    const std::string key = yaml_key(item.first);
    if (!seen.insert(key).second) throw Broken{"frontmatter repeats key " + key};
    if (key == "name") {
      out.name = yaml_string(item.second, "name");
      has_name = true;
    } else if (key == "description") {
      if (item.second.IsNull()) throw Broken{"description must be 1-1024 characters"};
      out.description = yaml_string(item.second, "description");
      has_description = true;
    } else if (key == "when_to_use") {
      if (!item.second.IsNull()) out.when_to_use = yaml_string(item.second, "when_to_use");
    } else if (optional_keys.count(key)) {
      if (key == "metadata") out.metadata = item.second;
      if (key == "tools") out.tools = item.second;
      if ((key == "license" || key == "compatibility" || key == "allowed-tools" || key == "model" ||
           key == "color") &&
          !item.second.IsScalar()) {
        throw Broken{key + " must be a string"};
      }
      if (key == "compatibility" && utf8_chars(item.second.Scalar()) > 500) {
        throw Broken{"compatibility must be at most 500 characters"};
      }
    } else {
      throw Broken{"frontmatter key " + (is_entry_name(key) ? key : std::string("(invalid)")) +
                   " is not allowed"};
    }
  }
  if (!has_name) throw Broken{"frontmatter must have a name"};
  if (!has_description) throw Broken{"frontmatter must have a description"};
  return out;
}

CatalogFile file_of(const std::string& rel, const std::string& bytes, CatalogContents& out) {
  CatalogFile file{rel, core::sha256_hex(bytes), static_cast<std::int64_t>(bytes.size())};
  out.blobs.emplace(file.sha256, bytes);
  return file;
}

struct Budget {
  std::uint64_t bytes = 0;
  void add(std::size_t n) {
    bytes += n;
    if (bytes > kMaxCatalogBytes) throw Broken{"catalog is larger than 512 MiB"};
  }
};

bool is_dot(const std::string& name) { return !name.empty() && name.front() == '.'; }

// Sorted children of a directory, refusing symlinks (reported against the child).
std::vector<fs::directory_entry> children(const fs::path& dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(*it);
  }
  if (ec) throw Broken{"directory cannot be listed"};
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return out;
}

fs::file_type link_type(const fs::directory_entry& entry) {
  std::error_code ec;
  const auto status = entry.symlink_status(ec);
  if (ec) throw Broken{"file cannot be inspected"};
  return status.type();
}

class Reader {
 public:
  explicit Reader(fs::path root) : root_(std::move(root)) {}

  CatalogContents run() {
    struct stat st {};
    if (::lstat(root_.c_str(), &st) != 0) throw Fatal{{".", "catalog directory does not exist"}};
    if (S_ISLNK(st.st_mode)) throw Fatal{{".", "symbolic links are not allowed in a catalog"}};
    if (!S_ISDIR(st.st_mode)) throw Fatal{{".", "catalog must be a directory"}};
    std::vector<fs::directory_entry> top;
    try {
      top = children(root_);
    } catch (const Broken& b) {
      throw Fatal{{".", b.rule}};
    }
    for (const auto& child : top) {
      const std::string name = child.path().filename().string();
      guard(name, [&] {
        const auto type = link_type(child);
        if (type == fs::file_type::symlink)
          throw Broken{"symbolic links are not allowed in a catalog"};
        if (type == fs::file_type::regular) return;  // README and the like: not entries
        if (type != fs::file_type::directory) throw Broken{"must be a regular file or directory"};
        if (is_dot(name)) return;  // .git and the like
        if (name == "skills") return section(child.path(), name, &Reader::skill);
        if (name == "agents") return section(child.path(), name, &Reader::agent);
        if (name == "mcp-servers") return section(child.path(), name, &Reader::mcp_server);
        if (name == "harnesses") return section(child.path(), name, &Reader::harness);
        throw Broken{"unknown catalog section (expected skills, agents, mcp-servers, harnesses)"};
      });
    }
    if (seen_entries_ > kMaxCatalogEntries) {
      problems_.push_back({".", "catalog has more than 10000 entries"});
    }
    if (!problems_.empty()) {
      std::sort(problems_.begin(), problems_.end(),
                [](const auto& a, const auto& b) { return a.file < b.file; });
      throw CatalogImportError(std::move(problems_));
    }
    std::sort(out_.entries.begin(), out_.entries.end(),
              [](const auto& a, const auto& b) { return a.capability_id() < b.capability_id(); });
    return std::move(out_);
  }

 private:
  using Handler = void (Reader::*)(const fs::directory_entry&, const std::string& rel);

  template <typename F>
  void guard(const std::string& rel, F&& body) {
    try {
      body();
    } catch (const Broken& b) {
      problems_.push_back({rel, b.rule});
    }
  }

  void section(const fs::path& dir, const std::string& rel, Handler handler) {
    for (const auto& child : children(dir)) {
      // Past the bound nothing more is read: one catalog-wide problem is reported instead.
      if (++seen_entries_ > kMaxCatalogEntries) return;
      const std::string child_rel = rel + "/" + child.path().filename().string();
      guard(child_rel, [&] {
        if (link_type(child) == fs::file_type::symlink) {
          throw Broken{"symbolic links are not allowed in a catalog"};
        }
        (this->*handler)(child, child_rel);
      });
    }
  }

  static std::string stem_of(const fs::directory_entry& entry, std::string_view extension) {
    const std::string file = entry.path().filename().string();
    if (link_type(entry) != fs::file_type::regular) {
      throw Broken{"must be a regular " + std::string(extension) + " file"};
    }
    if (file.size() <= extension.size() ||
        file.compare(file.size() - extension.size(), extension.size(), extension) != 0) {
      throw Broken{"file name must end in " + std::string(extension)};
    }
    return file.substr(0, file.size() - extension.size());
  }

  void skill(const fs::directory_entry& dir, const std::string& rel) {
    const std::string folder = dir.path().filename().string();
    if (link_type(dir) != fs::file_type::directory) throw Broken{"a skill must be a directory"};
    // Every file of the folder, depth-first, symlinks refused.
    std::vector<std::pair<std::string, fs::path>> files;
    const std::size_t problems_before = problems_.size();
    walk(dir.path(), rel, 1, files);
    if (problems_.size() != problems_before) return;  // symlinks or special files: reported
    std::sort(files.begin(), files.end());
    const std::string skill_md_rel = rel + "/SKILL.md";
    const auto md = std::find_if(files.begin(), files.end(),
                                 [&](const auto& f) { return f.first == skill_md_rel; });
    if (md == files.end()) throw Broken{"a skill folder must contain SKILL.md"};
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kSkill;
    std::string skill_md;
    // SKILL.md problems are reported against SKILL.md itself.
    try {
      skill_md = read_bounded(md->second, kMaxSkillMdBytes);
      if (!engine::is_valid_unicode(skill_md)) throw Broken{"SKILL.md must be valid UTF-8"};
      const auto fields =
          read_frontmatter(skill_md, {"license", "compatibility", "metadata", "allowed-tools"});
      if (!is_entry_name(fields.name)) {
        throw Broken{"name must be 1-64 of [a-z0-9-] without leading, trailing or double '-'"};
      }
      if (fields.name != folder) throw Broken{"name must match the skill folder name"};
      check_description(fields.description, true);
      std::vector<std::string> tags;
      if (fields.metadata) {
        if (!fields.metadata->IsMap()) throw Broken{"metadata must be a mapping"};
        for (const auto& item : *fields.metadata) {
          const std::string key = yaml_key(item.first);
          if (key == "tags") {
            tags = yaml_string_list(item.second, "metadata.tags");
          } else if (!item.second.IsScalar()) {
            throw Broken{"metadata values must be strings (metadata.tags may be a list)"};
          }
        }
      }
      entry.name = fields.name;
      entry.label = fields.name;
      entry.folder = folder;
      entry.description = fields.description;
      entry.when_to_use = fields.when_to_use;
      entry.tags = check_tags(tags);
    } catch (const Broken& b) {
      problems_.push_back({skill_md_rel, b.rule});
      return;
    }
    if (files.size() > kMaxSkillFiles) throw Broken{"a skill may hold at most 1000 files"};
    std::uint64_t skill_bytes = 0;
    for (const auto& [file_rel, path] : files) {
      std::string bytes;
      if (file_rel == skill_md_rel) {
        bytes = skill_md;
      } else {
        try {
          bytes = read_bounded(path, kMaxResourceFileBytes);
        } catch (const Broken& b) {
          problems_.push_back({file_rel, b.rule});
          continue;
        }
      }
      budget_.add(bytes.size());
      skill_bytes += bytes.size();
      if (skill_bytes > kMaxSkillTreeBytes) {
        problems_.push_back({rel, "a skill's files may hold at most 64 MiB together"});
        return;
      }
      CatalogFile file = file_of(file_rel, bytes, out_);
      if (file_rel == skill_md_rel) entry.primary = file;
      entry.files.push_back(std::move(file));
    }
    if (entry.files.size() > 1 ||
        static_cast<std::uint64_t>(entry.primary.bytes) > sdk::kMaxPlainSkillBytes) {
      // Resources, or a SKILL.md over the plain bound: the skill's material is its tree root
      // (plugin_abi.h "Tree material"), stored as one more object.
      std::vector<sdk::TreeFile> tree;
      bool valid = true;
      for (const auto& file : entry.files) {
        const std::string path = file.path.substr(rel.size() + 1);
        if (!sdk::is_tree_path(path)) {
          problems_.push_back({file.path,
                               "skill file names must match [A-Za-z0-9_][A-Za-z0-9._-]{0,127}"});
          valid = false;
        }
        tree.push_back({path, static_cast<std::uint64_t>(file.bytes), file.sha256});
      }
      if (!valid) return;
      const std::string manifest = sdk::tree_manifest_text(tree);
      entry.tree = file_of(rel, sdk::tree_root_text(tree, core::sha256_hex(manifest)), out_);
    }
    finish(std::move(entry));
  }

  void walk(const fs::path& dir, const std::string& rel, std::size_t depth,
            std::vector<std::pair<std::string, fs::path>>& files) {
    if (depth > kMaxSkillDepth) throw Broken{"a skill folder may nest at most 6 levels"};
    for (const auto& child : children(dir)) {
      const std::string child_rel = rel + "/" + child.path().filename().string();
      const auto type = link_type(child);
      if (type == fs::file_type::symlink) {
        problems_.push_back({child_rel, "symbolic links are not allowed in a catalog"});
      } else if (type == fs::file_type::directory) {
        walk(child.path(), child_rel, depth + 1, files);
      } else if (type == fs::file_type::regular) {
        files.emplace_back(child_rel, child.path());
        if (files.size() > kMaxSkillFiles) throw Broken{"a skill may hold at most 1000 files"};
      } else {
        problems_.push_back({child_rel, "must be a regular file or directory"});
      }
    }
  }

  void agent(const fs::directory_entry& file, const std::string& rel) {
    const std::string stem = stem_of(file, ".md");
    const std::string bytes = read_bounded(file.path(), kMaxAgentFileBytes);
    if (!engine::is_valid_unicode(bytes)) throw Broken{"agent file must be valid UTF-8"};
    const auto fields =
        read_frontmatter(bytes, {"tools", "disallowedTools", "model", "permissionMode", "maxTurns",
                                 "skills", "mcpServers", "hooks", "memory", "background", "effort",
                                 "isolation", "color", "initialPrompt"});
    if (!is_entry_name(fields.name)) {
      throw Broken{"name must be 1-64 of [a-z0-9-] without leading, trailing or double '-'"};
    }
    if (fields.name != stem) throw Broken{"name must match the file name"};
    check_description(fields.description, false);
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kAgent;
    entry.name = fields.name;
    entry.label = fields.name;
    entry.folder = stem;
    entry.description = fields.description;
    entry.when_to_use = fields.when_to_use;
    if (fields.tools) {
      entry.tools = yaml_string_list(*fields.tools, "tools");
      for (const auto& tool : entry.tools) {
        if (tool.empty() || tool.size() > 128 || !engine::is_valid_unicode(tool)) {
          throw Broken{"each tool must be a non-empty name of at most 128 characters"};
        }
      }
    }
    budget_.add(bytes.size());
    entry.primary = file_of(rel, bytes, out_);
    entry.files = {entry.primary};
    finish(std::move(entry));
  }

  // Reads a JSON entry object; `allowed` are its keys (name, description required).
  static Json json_entry(const std::string& bytes, const std::set<std::string>& allowed) {
    Json value;
    try {
      value = core::parse_json(bytes);
    } catch (const std::exception&) {
      throw Broken{"file is not valid JSON (or repeats a key)"};
    }
    if (!value.is_object()) throw Broken{"file must hold one JSON object"};
    for (const auto& [key, _] : value.items()) {
      if (!allowed.count(key)) {
        throw Broken{"key " + (is_entry_name(key) ? key : std::string("(invalid)")) +
                     " is not allowed"};
      }
    }
    for (const char* required : {"name", "description"}) {
      if (!value.contains(required)) throw Broken{std::string(required) + " is required"};
      if (!value[required].is_string()) throw Broken{std::string(required) + " must be a string"};
    }
    return value;
  }

  static std::vector<std::string> json_strings(const Json& value, const std::string& field) {
    if (!value.is_array()) throw Broken{field + " must be an array of strings"};
    std::vector<std::string> out;
    for (const auto& item : value) {
      if (!item.is_string()) throw Broken{field + " must be an array of strings"};
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  void json_common(CatalogEntry& entry, const Json& value, const std::string& stem) {
    entry.name = value["name"].get<std::string>();
    if (!is_entry_name(entry.name)) {
      throw Broken{"name must be 1-64 of [a-z0-9-] without leading, trailing or double '-'"};
    }
    if (entry.name != stem) throw Broken{"name must match the file name"};
    entry.label = entry.name;
    entry.folder = stem;
    entry.description = value["description"].get<std::string>();
    check_description(entry.description, false);
    if (value.contains("tags")) entry.tags = check_tags(json_strings(value["tags"], "tags"));
  }

  void mcp_server(const fs::directory_entry& file, const std::string& rel) {
    const std::string stem = stem_of(file, ".json");
    const std::string bytes = read_bounded(file.path(), kMaxJsonEntryBytes);
    const Json value =
        json_entry(bytes, {"name", "description", "command", "args", "env", "url", "tags"});
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kMcpServer;
    json_common(entry, value, stem);
    if (value.contains("command")) {
      if (!value["command"].is_string() || value["command"].get<std::string>().empty()) {
        throw Broken{"command must be a non-empty string"};
      }
      entry.command = value["command"].get<std::string>();
    }
    if (value.contains("url")) {
      if (!value["url"].is_string()) throw Broken{"url must be a string"};
      const std::string url = value["url"].get<std::string>();
      if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) {
        throw Broken{"url must be an http or https URL"};
      }
      entry.url = url;
    }
    if (!entry.command && !entry.url) throw Broken{"an mcp server needs a command or a url"};
    if (entry.command && entry.url) throw Broken{"an mcp server has a command or a url, not both"};
    if (value.contains("args")) {
      if (!entry.command) throw Broken{"args need a command"};
      entry.args = json_strings(value["args"], "args");
    }
    if (value.contains("env")) {
      if (!value["env"].is_object()) throw Broken{"env must be an object of strings"};
      for (const auto& [key, item] : value["env"].items()) {
        if (!item.is_string()) throw Broken{"env must be an object of strings"};
        const bool ok = !key.empty() && key.size() <= 128 &&
                        std::all_of(key.begin(), key.end(),
                                    [](char c) {
                                      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                             (c >= '0' && c <= '9') || c == '_';
                                    }) &&
                        !(key[0] >= '0' && key[0] <= '9');
        if (!ok) throw Broken{"env names must be [A-Za-z_][A-Za-z0-9_]*"};
        entry.env_names.push_back(key);
      }
      std::sort(entry.env_names.begin(), entry.env_names.end());
    }
    budget_.add(bytes.size());
    entry.primary = file_of(rel, bytes, out_);
    entry.files = {entry.primary};
    finish(std::move(entry));
  }

  void harness(const fs::directory_entry& file, const std::string& rel) {
    const std::string stem = stem_of(file, ".json");
    const std::string bytes = read_bounded(file.path(), kMaxJsonEntryBytes);
    const Json value = json_entry(bytes, {"name", "description", "tags"});
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kHarness;
    json_common(entry, value, stem);
    budget_.add(bytes.size());
    entry.primary = file_of(rel, bytes, out_);
    entry.files = {entry.primary};
    finish(std::move(entry));
  }

  void finish(CatalogEntry entry) {
    entry.terms = catalog_terms(entry);
    out_.entries.push_back(std::move(entry));
  }

  fs::path root_;
  CatalogContents out_;
  std::vector<CatalogProblem> problems_;
  Budget budget_;
  std::size_t seen_entries_ = 0;  // section children visited, valid or not
};

}  // namespace

CatalogImportError::CatalogImportError(std::vector<CatalogProblem> problems)
    : InvalidArgument(
          problems.empty()
              ? std::string("catalog is invalid")
              : "catalog entry " + problems.front().file + ": " + problems.front().rule +
                    (problems.size() > 1
                         ? " (and " + std::to_string(problems.size() - 1) + " more invalid file" +
                               (problems.size() > 2 ? "s" : "") + ")"
                         : std::string())),
      problems_(std::move(problems)) {}

CatalogContents read_catalog(const std::filesystem::path& catalog_dir) {
  try {
    return Reader(catalog_dir).run();
  } catch (const Fatal& f) {
    throw CatalogImportError({f.problem});
  }
}

}  // namespace ctx::runtime
