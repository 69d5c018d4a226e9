// read_catalog: walks a catalog tree and reads every file a host would load (see catalog.hpp and
// docs/catalog.md). A file no host would load is one CatalogProblem (a skip line); nothing here
// writes, and nothing outside the tree is opened (symbolic links are never followed).
#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>  // header-only (no link dependency)
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctx/sdk/skill_tree.hpp>
#include <set>

#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/catalog/catalog.hpp"
#include "host/runtime/catalog/catalog_frontmatter.hpp"

namespace ctx::runtime {

// A plain skill's SKILL.md is its material: the plain bound is the engine's material bound.
static_assert(sdk::kMaxPlainSkillBytes ==
              static_cast<std::uint64_t>(engine::kMaxPreparedContentBytes));
static_assert(sdk::kMaxTreeRootChars <= sdk::kMaxPlainSkillBytes);

namespace {

namespace fs = std::filesystem;
using core::Json;

using detail::Broken;
using detail::read_frontmatter;
using detail::yaml_string_list;

// Unrecoverable: the catalog as a whole cannot be read (recorded against `file`).
struct Fatal {
  CatalogProblem problem;
};

constexpr std::string_view kNameRule =
    "must be 1-64 of [a-z0-9-] without leading, trailing or double '-'";

// Agent Skills name rule: 1–64 of [a-z0-9-], no leading/trailing '-', no "--".
bool is_entry_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameChars) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-' && name.find("--") == std::string_view::npos;
}

// A file name ctx can name in a line and a manifest: UTF-8 without control characters.
bool is_printable_name(std::string_view name) {
  if (!engine::is_valid_unicode(name)) return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string trim(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// Every description imports whatever its length; it must say something and be text.
std::string check_description(const std::string& description) {
  if (!engine::is_valid_unicode(description)) throw Broken{"description must be valid UTF-8"};
  if (trim(description).empty()) throw Broken{"description must not be empty"};
  return description;
}

// Explicit tags (a ctx extension): the ones that are entry names, at most 32, sorted unique;
// others are ignored like any key a host does not use.
std::vector<std::string> usable_tags(const std::vector<std::string>& tags) {
  std::set<std::string> out;
  for (const auto& tag : tags) {
    if (out.size() >= kMaxExplicitTags) break;
    if (is_entry_name(tag)) out.insert(tag);
  }
  return {out.begin(), out.end()};
}

// Reads a regular file without following a symlink, at most `limit` bytes (a larger file is
// refused from its size alone, unread).
std::string read_bounded(const fs::path& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) throw Broken{"symbolic links are not followed"};
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

CatalogFile file_of(const std::string& rel, const std::string& bytes, CatalogContents& out) {
  CatalogFile file{rel, core::sha256_hex(bytes), static_cast<std::int64_t>(bytes.size())};
  out.blobs.emplace(file.sha256, bytes);
  return file;
}

struct Budget {
  std::uint64_t bytes = 0;
  void add(std::size_t n) {
    bytes += n;
    if (bytes > kMaxCatalogBytes) {
      throw Fatal{{".", "catalog is larger than " + std::to_string(kMaxCatalogBytes) + " bytes"}};
    }
  }
};

bool is_dot(std::string_view name) { return !name.empty() && name.front() == '.'; }

// Sorted children of a directory (bytewise by name).
std::vector<fs::directory_entry> children(const fs::path& dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(*it);
  }
  if (ec) throw Broken{"directory cannot be listed"};
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.path().filename().native() < b.path().filename().native();
  });
  return out;
}

fs::file_type link_type(const fs::directory_entry& entry) {
  std::error_code ec;
  const auto status = entry.symlink_status(ec);
  if (ec) throw Broken{"file cannot be inspected"};
  return status.type();
}

fs::file_type link_type(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::symlink_status(path, ec);
  if (ec) return fs::file_type::not_found;
  return status.type();
}

// How to order two entries of the same kind and name: the fewest path components wins, then the
// bytewise-smallest path (docs/catalog.md).
bool found_before(const CatalogEntry& a, const CatalogEntry& b) {
  const auto depth = [](const std::string& path) {
    return std::count(path.begin(), path.end(), '/');
  };
  const std::string pa = entry_location(a);
  const std::string pb = entry_location(b);
  if (depth(pa) != depth(pb)) return depth(pa) < depth(pb);
  return pa < pb;
}

class Reader {
 public:
  Reader(fs::path root, const CatalogProgress& progress)
      : root_(std::move(root)), progress_(progress) {}

  CatalogContents run() {
    struct stat st {};
    if (::lstat(root_.c_str(), &st) != 0) throw Fatal{{".", "catalog directory does not exist"}};
    if (S_ISLNK(st.st_mode)) throw Fatal{{".", "symbolic links are not followed"}};
    if (!S_ISDIR(st.st_mode)) throw Fatal{{".", "catalog must be a directory"}};
    walk(root_, "", 0);
    if (entries_seen_ > kMaxCatalogEntries) {
      problems_.push_back(
          {".", "catalog has more than " + std::to_string(kMaxCatalogEntries) + " entries"});
    }
    // One entry per kind and name: the first found (found_before) is kept, each other one is
    // reported against its file.
    std::sort(out_.entries.begin(), out_.entries.end(), [](const auto& a, const auto& b) {
      if (a.capability_id() != b.capability_id()) return a.capability_id() < b.capability_id();
      return found_before(a, b);
    });
    std::vector<CatalogEntry> kept;
    for (auto& entry : out_.entries) {
      if (!kept.empty() && kept.back().capability_id() == entry.capability_id()) {
        const CatalogEntry& first = kept.back();
        problems_.push_back({entry_location(entry), "duplicate " + entry.capability_id() +
                                                        " (kept " + entry_location(first) + ")"});
        continue;
      }
      kept.push_back(std::move(entry));
    }
    out_.entries = std::move(kept);
    std::sort(problems_.begin(), problems_.end(),
              [](const auto& a, const auto& b) { return a.file < b.file; });
    out_.skipped = std::move(problems_);
    return std::move(out_);
  }

 private:
  template <typename F>
  void guard(const std::string& rel, F&& body) {
    try {
      body();
    } catch (const Broken& b) {
      problems_.push_back({rel, b.rule});
    }
  }

  static std::string join(const std::string& rel, const std::string& name) {
    return rel.empty() ? name : rel + "/" + name;
  }

  // Walks every directory of the tree once, depth-first in name order, never following a link.
  void walk(const fs::path& dir, const std::string& rel, std::size_t depth) {
    std::vector<fs::directory_entry> list;
    try {
      list = children(dir);
    } catch (const Broken& b) {
      if (rel.empty()) throw Fatal{{".", b.rule}};
      problems_.push_back({rel, b.rule});
      return;
    }
    const std::string parent =
        rel.substr(rel.rfind('/') == std::string::npos ? 0 : rel.rfind('/') + 1);
    for (const auto& child : list) {
      if (++files_seen_ > kMaxCatalogFiles) {
        throw Fatal{{".", "catalog has more than " + std::to_string(kMaxCatalogFiles) + " files"}};
      }
      const std::string name = child.path().filename().string();
      if (name == ".git" || name == "node_modules") continue;
      const std::string child_rel = join(rel, printable(name));
      fs::file_type type = fs::file_type::unknown;
      try {
        type = link_type(child);
      } catch (const Broken& b) {
        problems_.push_back({child_rel, b.rule});
        continue;
      }
      if (type == fs::file_type::directory) {
        if (!is_printable_name(name)) {
          problems_.push_back({child_rel, "file name must be UTF-8 without control characters"});
          continue;
        }
        if (depth + 1 > kMaxCatalogDepth) {
          problems_.push_back({child_rel, "catalog folders may nest at most " +
                                              std::to_string(kMaxCatalogDepth) + " levels"});
          continue;
        }
        const auto skill_md = link_type(child.path() / "SKILL.md");
        if (skill_md != fs::file_type::not_found) {
          count_entry();
          guard(child_rel, [&] { skill(child.path(), child_rel, name); });
        } else {
          walk(child.path(), child_rel, depth + 1);
        }
        continue;
      }
      const auto role = candidate(parent, name);
      if (type == fs::file_type::symlink && (role || is_section(parent) || is_section(name))) {
        // A link where a capability could be (the target is never looked at).
        problems_.push_back({child_rel, "symbolic links are not followed"});
        continue;
      }
      if (!role) continue;  // not a file any host loads a capability from
      if (!is_printable_name(name)) {
        problems_.push_back({child_rel, "file name must be UTF-8 without control characters"});
        continue;
      }
      if (type != fs::file_type::regular) {
        problems_.push_back({child_rel, "must be a regular file"});
        continue;
      }
      if (!processed_.insert(child_rel).second) continue;  // a plugin manifest named it already
      count_entry();
      guard(child_rel, [&] { read_role(*role, child.path(), child_rel); });
    }
  }

  enum class Role { kAgent, kCodexAgent, kMcpServer, kHarness, kMcpConfig, kPlugin, kMarketplace };

  void read_role(Role role, const fs::path& path, const std::string& rel) {
    switch (role) {
      case Role::kAgent:
        return agent(path, rel);
      case Role::kCodexAgent:
        return codex_agent(path, rel);
      case Role::kMcpServer:
        return mcp_server(path, rel);
      case Role::kHarness:
        return harness(path, rel);
      case Role::kMcpConfig:
        return mcp_config(read_json_file(path, kMaxMcpConfigBytes), rel, "");
      case Role::kPlugin:
        return plugin_manifest(path, rel);
      case Role::kMarketplace:
        return marketplace(path, rel);
    }
  }

  // A folder whose children are capabilities: a link in it is reported, not silently passed.
  static bool is_section(const std::string& parent) {
    return parent == "skills" || parent == "agents" || parent == "mcp-servers" ||
           parent == "harnesses" || parent == "plugins";
  }

  // The role of a file of `name` in a folder named `parent`, if a host loads capabilities from it.
  static std::optional<Role> candidate(const std::string& parent, const std::string& name) {
    if (parent == "agents" && ends_with(name, ".md") && name.size() > 3) return Role::kAgent;
    if (parent == "agents" && ends_with(name, ".toml") && name.size() > 5) {
      return Role::kCodexAgent;
    }
    if (parent == "mcp-servers" && ends_with(name, ".json") && name.size() > 5) {
      return Role::kMcpServer;
    }
    if (parent == "harnesses" && ends_with(name, ".json") && name.size() > 5) {
      return Role::kHarness;
    }
    if (name == ".mcp.json") return Role::kMcpConfig;
    if (parent == ".claude-plugin" && name == "plugin.json") return Role::kPlugin;
    if (parent == ".claude-plugin" && name == "marketplace.json") return Role::kMarketplace;
    return std::nullopt;
  }

  // A name as a skip line shows it: control bytes, backslash and non-UTF-8 bytes as \xNN.
  static std::string printable(const std::string& name) {
    if (is_printable_name(name) && name.find('\\') == std::string::npos) return name;
    const bool utf8 = engine::is_valid_unicode(name);
    std::string out;
    for (char c : name) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f || c == '\\' || (!utf8 && u >= 0x80)) {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[u >> 4];
        out += kHex[u & 15];
      } else {
        out += c;
      }
    }
    return out;
  }

  void count_entry() {
    if (++entries_seen_ > kMaxCatalogEntries) {
      throw Fatal{
          {".", "catalog has more than " + std::to_string(kMaxCatalogEntries) + " entries"}};
    }
    if (progress_) progress_("read", entries_seen_, 0);
  }

  // A folder holding SKILL.md: the skill named by the folder, its files the folder's files
  // (dot files excluded). Any file the skill cannot hold skips the whole skill.
  void skill(const fs::path& dir, const std::string& rel, const std::string& folder) {
    if (!is_entry_name(folder)) throw Broken{"a skill folder name " + std::string(kNameRule)};
    const std::string skill_md_rel = rel + "/SKILL.md";
    std::vector<std::pair<std::string, fs::path>> files;
    std::vector<CatalogProblem> local;
    skill_walk(dir, rel, 1, files, local);
    if (!local.empty()) {
      problems_.insert(problems_.end(), local.begin(), local.end());
      return;
    }
    std::sort(files.begin(), files.end());
    const auto md = std::find_if(files.begin(), files.end(),
                                 [&](const auto& f) { return f.first == skill_md_rel; });
    if (md == files.end()) {
      problems_.push_back({skill_md_rel, "SKILL.md must be a regular file"});
      return;
    }
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kSkill;
    std::string skill_md;
    // SKILL.md problems are reported against SKILL.md itself.
    try {
      skill_md = read_bounded(md->second, kMaxSkillMdBytes);
      if (!engine::is_valid_unicode(skill_md)) throw Broken{"SKILL.md must be valid UTF-8"};
      const auto fields = read_frontmatter(skill_md);
      if (!fields.description) throw Broken{"frontmatter must have a description"};
      entry.name = folder;
      entry.label = fields.name && engine::is_valid_unicode(*fields.name) && !fields.name->empty()
                        ? *fields.name
                        : folder;
      entry.folder = folder;
      entry.description = check_description(*fields.description);
      entry.when_to_use = fields.when_to_use;
      entry.tags = usable_tags(fields.tags);
    } catch (const Broken& b) {
      problems_.push_back({skill_md_rel, b.rule});
      return;
    }
    if (files.size() > kMaxSkillFiles) {
      problems_.push_back(
          {rel, "a skill may hold at most " + std::to_string(kMaxSkillFiles) + " files"});
      return;
    }
    std::uint64_t skill_bytes = 0;
    for (const auto& [file_rel, path] : files) {
      std::string bytes;
      if (file_rel == skill_md_rel) {
        bytes = skill_md;
      } else {
        try {
          bytes = read_bounded(path, kMaxResourceFileBytes);
        } catch (const Broken& b) {
          local.push_back({file_rel, b.rule});
          continue;
        }
      }
      skill_bytes += bytes.size();
      if (skill_bytes > kMaxSkillTreeBytes) {
        problems_.push_back({rel, "a skill's files may hold at most 64 MiB together"});
        return;
      }
      budget_.add(bytes.size());
      CatalogFile file = file_of(file_rel, bytes, out_);
      if (file_rel == skill_md_rel) entry.primary = file;
      entry.files.push_back(std::move(file));
    }
    if (!local.empty()) {
      problems_.insert(problems_.end(), local.begin(), local.end());
      return;
    }
    if (entry.files.size() > 1 ||
        static_cast<std::uint64_t>(entry.primary.bytes) > sdk::kMaxPlainSkillBytes) {
      // Resources, or a SKILL.md over the plain bound: the skill's material is its tree root
      // (plugin_abi.h "Tree material"), stored as one more object.
      std::vector<sdk::TreeFile> tree;
      for (const auto& file : entry.files) {
        tree.push_back({file.path.substr(rel.size() + 1), static_cast<std::uint64_t>(file.bytes),
                        file.sha256});
      }
      const std::string manifest = sdk::tree_manifest_text(tree);
      entry.tree = file_of(rel, sdk::tree_root_text(tree, core::sha256_hex(manifest)), out_);
    }
    finish(std::move(entry));
  }

  // The files of a skill folder. Dot files and folders are not part of a skill; a link, a
  // special file or a name a skill tree cannot hold is a problem of the skill.
  void skill_walk(const fs::path& dir, const std::string& rel, std::size_t depth,
                  std::vector<std::pair<std::string, fs::path>>& files,
                  std::vector<CatalogProblem>& local) {
    std::vector<fs::directory_entry> list;
    try {
      list = children(dir);
    } catch (const Broken& b) {
      local.push_back({rel, b.rule});
      return;
    }
    for (const auto& child : list) {
      const std::string name = child.path().filename().string();
      if (is_dot(name)) continue;
      const std::string child_rel = rel + "/" + printable(name);
      if (++files_seen_ > kMaxCatalogFiles) {
        throw Fatal{{".", "catalog has more than " + std::to_string(kMaxCatalogFiles) + " files"}};
      }
      if (!is_printable_name(name) || !sdk::is_tree_path(name)) {
        local.push_back(
            {child_rel, "skill file names must match [A-Za-z0-9_][A-Za-z0-9._-]{0,127}"});
        continue;
      }
      fs::file_type type = fs::file_type::unknown;
      try {
        type = link_type(child);
      } catch (const Broken& b) {
        local.push_back({child_rel, b.rule});
        continue;
      }
      if (type == fs::file_type::symlink) {
        local.push_back({child_rel, "symbolic links are not followed"});
      } else if (type == fs::file_type::directory) {
        if (depth + 1 > kMaxSkillDepth) {
          local.push_back({child_rel, "a skill folder may nest at most " +
                                          std::to_string(kMaxSkillDepth) + " levels"});
          continue;
        }
        skill_walk(child.path(), child_rel, depth + 1, files, local);
      } else if (type == fs::file_type::regular) {
        if (files.size() >= kMaxSkillFiles) {
          local.push_back(
              {rel, "a skill may hold at most " + std::to_string(kMaxSkillFiles) + " files"});
          return;
        }
        files.emplace_back(child_rel, child.path());
      } else {
        local.push_back({child_rel, "must be a regular file or directory"});
      }
    }
  }

  // agents/<file>.md: the agent named by its frontmatter `name` (a description required).
  void agent(const fs::path& path, const std::string& rel) {
    const std::string bytes = read_bounded(path, kMaxAgentFileBytes);
    if (!engine::is_valid_unicode(bytes)) throw Broken{"agent file must be valid UTF-8"};
    const auto fields = read_frontmatter(bytes);
    if (!fields.name) throw Broken{"frontmatter must have a name"};
    if (!is_entry_name(*fields.name)) throw Broken{"name " + std::string(kNameRule)};
    if (!fields.description) throw Broken{"frontmatter must have a description"};
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kAgent;
    entry.name = *fields.name;
    entry.label = *fields.name;
    const std::string file = path.filename().string();
    entry.folder = file.substr(0, file.size() - 3);
    entry.description = check_description(*fields.description);
    entry.when_to_use = fields.when_to_use;
    entry.tags = usable_tags(fields.tags);
    if (fields.tools) {
      const auto tools = yaml_string_list(*fields.tools);
      if (!tools) throw Broken{"tools must be a list or a comma-separated string"};
      for (const auto& tool : *tools) {
        if (tool.empty() || tool.size() > 128 || !engine::is_valid_unicode(tool)) {
          throw Broken{"each tool must be a non-empty name of at most 128 characters"};
        }
      }
      entry.tools = *tools;
    }
    budget_.add(bytes.size());
    entry.primary = file_of(rel, bytes, out_);
    entry.files = {entry.primary};
    if (bytes.size() > sdk::kMaxPlainSkillBytes) {
      // Over the engine's material bound: the agent's material is the root of a one-file tree
      // (ctx/sdk/skill_tree.hpp, AGENT.md), stored as one more object.
      const std::vector<sdk::TreeFile> tree{
          {sdk::kAgentFile, static_cast<std::uint64_t>(bytes.size()), entry.primary.sha256}};
      const std::string manifest = sdk::tree_manifest_text(tree, sdk::kAgentFile);
      entry.tree = file_of(rel, sdk::tree_root_text(tree, core::sha256_hex(manifest)), out_);
    }
    finish(std::move(entry));
  }

  // Reads a JSON entry object with a string name and description (other keys ignored).
  static Json json_entry(const std::string& bytes) {
    Json value;
    try {
      value = core::parse_json(bytes);
    } catch (const std::exception&) {
      throw Broken{"file is not valid JSON (or repeats a key)"};
    }
    if (!value.is_object()) throw Broken{"file must hold one JSON object"};
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

  static std::string stem(const fs::path& path) { return path.stem().string(); }

  void json_common(CatalogEntry& entry, const Json& value, const fs::path& path) {
    entry.name = value["name"].get<std::string>();
    if (!is_entry_name(entry.name)) throw Broken{"name " + std::string(kNameRule)};
    entry.label = entry.name;
    entry.folder = stem(path);
    entry.description = check_description(value["description"].get<std::string>());
    if (value.contains("tags") && value["tags"].is_array()) {
      std::vector<std::string> tags;
      for (const auto& tag : value["tags"]) {
        if (tag.is_string()) tags.push_back(tag.get<std::string>());
      }
      entry.tags = usable_tags(tags);
    }
  }

  // The launch fields of an mcp server (ctx's mcp-servers/*.json and .mcp.json alike), with the
  // rules a host would refuse it by.
  static void mcp_fields(CatalogEntry& entry, const Json& value) {
    if (value.contains("command")) {
      if (!value["command"].is_string() || value["command"].get<std::string>().empty()) {
        throw Broken{"command must be a non-empty string"};
      }
      entry.command = value["command"].get<std::string>();
      if (entry.command->front() != '/' && entry.command->find('/') != std::string::npos) {
        throw Broken{"command must be a program name or an absolute path, not a relative path"};
      }
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
      std::size_t bytes = 0;
      for (const auto& arg : entry.args) bytes += arg.size();
      if (bytes > kMaxMcpArgsBytes) {
        throw Broken{"args are larger than " + std::to_string(kMaxMcpArgsBytes) + " bytes"};
      }
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
  }

  void mcp_server(const fs::path& path, const std::string& rel) {
    const std::string bytes = read_bounded(path, kMaxJsonEntryBytes);
    const Json value = json_entry(bytes);
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kMcpServer;
    json_common(entry, value, path);
    mcp_fields(entry, value);
    budget_.add(bytes.size());
    entry.primary = file_of(rel, bytes, out_);
    entry.files = {entry.primary};
    finish(std::move(entry));
  }

  static Json read_json_file(const fs::path& path, std::size_t limit) {
    const std::string bytes = read_bounded(path, limit);
    try {
      return core::parse_json(bytes);
    } catch (const std::exception&) {
      throw Broken{"file is not valid JSON (or repeats a key)"};
    }
  }

  // {"mcpServers": {NAME: SERVER, ...}} (a .mcp.json, or a plugin's mcpServers): each server is
  // one entry named by its key; its material is the server as ctx's mcp-servers JSON (a
  // description given, else "MCP server NAME" and `context`). Its file is "REL#NAME".
  void mcp_config(const Json& value, const std::string& rel, const std::string& context) {
    if (!value.is_object()) throw Broken{"file must hold one JSON object"};
    const Json* servers = &value;
    if (value.contains("mcpServers")) servers = &value["mcpServers"];
    if (!servers->is_object()) throw Broken{"mcpServers must be an object"};
    for (const auto& item : servers->items()) {
      // Named references, not a structured binding: the lambda below uses them (Clang refuses
      // to capture a structured binding before C++20's P1091 support).
      const std::string& name = item.key();
      const Json& server = item.value();
      const std::string server_rel = rel + "#" + printable(name);
      if (server_rel != rel + "#" + name || server_rel.size() > 4096) {
        problems_.push_back({server_rel, "server names must be UTF-8 without control characters"});
        continue;
      }
      count_entry();
      guard(server_rel, [&] {
        if (!is_entry_name(name)) throw Broken{"server name " + std::string(kNameRule)};
        if (!server.is_object()) throw Broken{"an mcp server must be a JSON object"};
        CatalogEntry entry;
        entry.kind = engine::CapabilityKind::kMcpServer;
        entry.name = name;
        entry.label = name;
        entry.folder = name;
        std::string description = "MCP server " + name + (context.empty() ? "" : " of " + context);
        if (server.contains("description")) {
          if (!server["description"].is_string()) throw Broken{"description must be a string"};
          description = server["description"].get<std::string>();
        }
        entry.description = check_description(description);
        mcp_fields(entry, server);
        Json material = Json{{"description", entry.description}, {"name", name}};
        for (const char* key : {"command", "args", "env", "url"}) {
          if (server.contains(key)) material[key] = server[key];
        }
        const std::string bytes = core::canonical_json(material);
        budget_.add(bytes.size());
        entry.primary = file_of(server_rel, bytes, out_);
        entry.files = {entry.primary};
        finish(std::move(entry));
      });
    }
  }

  // A relative path a manifest names, resolved inside the tree without passing a link.
  fs::path inside(const std::string& base_rel, const std::string& path, std::string& rel) const {
    fs::path joined = (fs::path(base_rel) / path).lexically_normal();
    rel = joined.generic_string();
    while (!rel.empty() && rel.back() == '/') rel.pop_back();
    if (fs::path(path).is_absolute() || rel.rfind("..", 0) == 0) {
      throw Broken{"path " + printable(path) + " leaves the catalog"};
    }
    if (rel.empty() || rel == ".") {
      rel.clear();
      return root_;
    }
    fs::path full = root_;
    for (const auto& part : fs::path(rel)) {
      full /= part;
      struct stat st {};
      if (::lstat(full.c_str(), &st) != 0)
        throw Broken{"path " + printable(path) + " does not exist"};
      if (S_ISLNK(st.st_mode)) throw Broken{"symbolic links are not followed"};
    }
    return full;
  }

  static std::vector<std::string> path_list(const Json& value) {
    std::vector<std::string> out;
    if (value.is_string()) out.push_back(value.get<std::string>());
    if (value.is_array()) {
      for (const auto& item : value) {
        if (item.is_string()) out.push_back(item.get<std::string>());
      }
    }
    return out;
  }

  // What a plugin declares beyond its skills/ and agents/ folders (found by the walk): agent
  // files or folders elsewhere, and its MCP servers (inline, or a path to a .mcp.json-shaped
  // file). `base_rel` is the plugin's root.
  void plugin_fields(const Json& plugin, const std::string& base_rel, const std::string& rel,
                     const std::string& name) {
    if (plugin.contains("agents")) {
      for (const auto& path : path_list(plugin["agents"])) {
        guard(rel, [&] {
          std::string agent_rel;
          const fs::path full = inside(base_rel, path, agent_rel);
          std::vector<std::pair<std::string, fs::path>> files;
          if (fs::is_directory(fs::symlink_status(full))) {
            for (const auto& child : children(full)) {
              const std::string file = child.path().filename().string();
              if (ends_with(file, ".md") && link_type(child) == fs::file_type::regular &&
                  is_printable_name(file)) {
                files.emplace_back(agent_rel + "/" + file, child.path());
              }
            }
          } else {
            files.emplace_back(agent_rel, full);
          }
          for (const auto& file : files) {
            const std::string& file_rel = file.first;  // named: captured by the lambda below
            if (!processed_.insert(file_rel).second) continue;
            count_entry();
            guard(file_rel, [&] { agent(file.second, file_rel); });
          }
        });
      }
    }
    if (plugin.contains("mcpServers")) {
      const Json& servers = plugin["mcpServers"];
      if (servers.is_object()) {
        guard(rel, [&] { mcp_config(servers, rel, name); });
      } else {
        for (const auto& path : path_list(servers)) {
          guard(rel, [&] {
            std::string config_rel;
            const fs::path full = inside(base_rel, path, config_rel);
            if (!processed_.insert(config_rel).second) return;
            guard(config_rel,
                  [&] { mcp_config(read_json_file(full, kMaxMcpConfigBytes), config_rel, name); });
          });
        }
      }
    }
  }

  static std::string parent_of(const std::string& rel, int levels) {
    std::string out = rel;
    for (int i = 0; i < levels; ++i) {
      const auto slash = out.rfind('/');
      out = slash == std::string::npos ? std::string() : out.substr(0, slash);
    }
    return out;
  }

  // <plugin>/.claude-plugin/plugin.json.
  void plugin_manifest(const fs::path& path, const std::string& rel) {
    const Json value = read_json_file(path, kMaxMcpConfigBytes);
    if (!value.is_object()) throw Broken{"file must hold one JSON object"};
    const std::string name =
        value.contains("name") && value["name"].is_string() ? value["name"].get<std::string>() : "";
    plugin_fields(value, parent_of(rel, 2), rel, is_printable_name(name) ? name : "");
  }

  // <root>/.claude-plugin/marketplace.json: its local plugins' declarations (their folders are
  // walked anyway); a plugin from another repository is reported, not fetched.
  void marketplace(const fs::path& path, const std::string& rel) {
    const Json value = read_json_file(path, kMaxMcpConfigBytes);
    if (!value.is_object()) throw Broken{"file must hold one JSON object"};
    if (!value.contains("plugins")) return;
    if (!value["plugins"].is_array()) throw Broken{"plugins must be an array"};
    const std::string base = parent_of(rel, 2);
    for (const auto& plugin : value["plugins"]) {
      if (!plugin.is_object()) continue;
      const std::string name = plugin.contains("name") && plugin["name"].is_string()
                                   ? plugin["name"].get<std::string>()
                                   : std::string();
      const std::string shown = is_printable_name(name) ? name : std::string("(unnamed)");
      if (!plugin.contains("source") || !plugin["source"].is_string()) {
        problems_.push_back({rel + "#" + shown,
                             "the plugin's source is another repository (add it with ctx catalog "
                             "add)"});
        continue;
      }
      guard(rel + "#" + shown, [&] {
        std::string plugin_rel;
        inside(base.empty() ? "." : base, plugin["source"].get<std::string>(), plugin_rel);
        plugin_fields(plugin, plugin_rel, rel + "#" + shown, shown);
      });
    }
  }

  // agents/<file>.toml: a Codex agent, named by its `name`, with a `description`.
  void codex_agent(const fs::path& path, const std::string& rel) {
    const std::string bytes = read_bounded(path, kMaxAgentFileBytes);
    if (!engine::is_valid_unicode(bytes)) throw Broken{"agent file must be valid UTF-8"};
    toml::table table;
    try {
      table = toml::parse(bytes);
    } catch (const toml::parse_error&) {
      throw Broken{"file is not valid TOML"};
    }
    const auto name = table["name"].value<std::string>();
    const auto description = table["description"].value<std::string>();
    if (!name) throw Broken{"name is required (a string)"};
    if (!is_entry_name(*name)) throw Broken{"name " + std::string(kNameRule)};
    if (!description) throw Broken{"description is required (a string)"};
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kAgent;
    entry.name = *name;
    entry.label = *name;
    entry.folder = path.stem().string();
    entry.description = check_description(*description);
    budget_.add(bytes.size());
    entry.primary = file_of(rel, bytes, out_);
    entry.files = {entry.primary};
    finish(std::move(entry));
  }

  void harness(const fs::path& path, const std::string& rel) {
    const std::string bytes = read_bounded(path, kMaxJsonEntryBytes);
    const Json value = json_entry(bytes);
    CatalogEntry entry;
    entry.kind = engine::CapabilityKind::kHarness;
    json_common(entry, value, path);
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
  const CatalogProgress& progress_;
  std::size_t entries_seen_ = 0;     // candidate files and skill folders visited, valid or not
  std::size_t files_seen_ = 0;       // directory entries visited
  std::set<std::string> processed_;  // candidate files read (a manifest may name one again)
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

std::vector<std::string> tree_paths(const CatalogEntry& entry) {
  std::vector<std::string> out;
  if (!entry.tree) return out;
  if (entry.kind == engine::CapabilityKind::kAgent) {
    out.assign(entry.files.size(), sdk::kAgentFile);
    return out;
  }
  const std::size_t prefix = entry.tree->path.size() + 1;
  for (const auto& file : entry.files) out.push_back(file.path.substr(prefix));
  return out;
}

std::string entry_location(const CatalogEntry& entry) {
  if (entry.kind == engine::CapabilityKind::kSkill) {
    return entry.primary.path.substr(0, entry.primary.path.rfind('/'));
  }
  return entry.primary.path;
}

CatalogContents read_catalog(const std::filesystem::path& catalog_dir,
                             const CatalogProgress& progress) {
  try {
    return Reader(catalog_dir, progress).run();
  } catch (const Fatal& f) {
    throw CatalogImportError({f.problem});
  }
}

}  // namespace ctx::runtime
