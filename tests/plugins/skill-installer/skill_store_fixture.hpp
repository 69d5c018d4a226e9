// Shared fixture of the skill store tests: a fresh temporary base directory per test with the
// store root, a project activation root and helpers to build skill source trees on disk.
#ifndef CTX_TESTS_PLUGINS_SKILL_INSTALLER_SKILL_STORE_FIXTURE_HPP_
#define CTX_TESTS_PLUGINS_SKILL_INSTALLER_SKILL_STORE_FIXTURE_HPP_

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"
#include "plugins/skill-installer/core/skill_store.hpp"

namespace ctx::skill_installer::testing {

namespace fs = std::filesystem;

inline constexpr char kBody[] = "---\nname: pdf\ndescription: pdf fixture\n---\nUse pdf.\n";

// The tree manifest of `files` (path -> bytes), spelled out here independently of the store.
inline std::string manifest_of(const std::map<std::string, std::string>& files) {
  std::string text = "{\"files\":[";
  bool first = true;
  for (const auto& [path, bytes] : files) {  // std::map iterates bytewise-sorted
    if (!first) text += ",";
    first = false;
    text += "{\"bytes\":" + std::to_string(bytes.size()) + ",\"path\":\"" + path +
            "\",\"sha256\":\"" + plugin_common::sha256_hex(bytes) + "\"}";
  }
  return text + "],\"schema\":\"ctx.skill-tree-v1\"}";
}

// The tree root of `files` (the tree material, plugin_abi.h "Tree material") over `manifest`
// (by default their own manifest), spelled out here independently of the store.
inline std::string root_of(const std::map<std::string, std::string>& files,
                           const std::string& manifest) {
  std::size_t bytes = 0;
  for (const auto& [path, content] : files) bytes += content.size();
  return "{\"bytes\":" + std::to_string(bytes) + ",\"files\":" + std::to_string(files.size()) +
         ",\"manifest_sha256\":\"" + plugin_common::sha256_hex(manifest) +
         "\",\"schema\":\"ctx.skill-tree-root-v1\"}";
}
inline std::string root_of(const std::map<std::string, std::string>& files) {
  return root_of(files, manifest_of(files));
}

class SkillStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ctx-skill-store-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    base_ = pattern;
    root_ = base_ / "root";
    skills_ = base_ / "project" / ".claude" / "skills";
  }
  void TearDown() override {
    std::error_code ignored;
    for (const auto& entry : fs::recursive_directory_iterator(base_, ignored)) {
      if (entry.is_directory() && !entry.is_symlink()) {
        fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add, ignored);
      }
    }
    fs::remove_all(base_, ignored);
  }

  std::string config(Json extra = Json::object()) const {
    Json config = {{"root", root_.string()}, {"activation_root", skills_.string()}};
    config.update(extra);
    return config.dump();
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }
  static void write(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }

  // Writes a source tree under base_/`name` and returns its directory.
  fs::path source_tree(const std::string& name, const std::map<std::string, std::string>& files) {
    const fs::path dir = base_ / name;
    for (const auto& [path, bytes] : files) write(dir / path, bytes);
    return dir;
  }

  // Every path below `dir`, relative.
  static std::set<std::string> listing(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      out.insert(entry.path().lexically_relative(dir).string());
    }
    return out;
  }

  static Json tree_request(const std::string& capability_id, const fs::path& source,
                           const std::map<std::string, std::string>& files) {
    const std::string manifest = manifest_of(files);
    const std::string root = root_of(files, manifest);
    return Json{{"capability_id", capability_id},
                {"content_sha256", plugin_common::sha256_hex(root)},
                {"content_bytes", root.size()},
                {"manifest", manifest},
                {"source", {{"directory", source.string()}}}};
  }

  static Json reconcile_of(const SkillStore& store, const std::string& capability_id,
                           const std::string& hex) {
    const Json entry = {{"capability_id", capability_id}, {"content_sha256", hex}};
    return store.reconcile(Json{{"capabilities", Json::array({entry})}}.dump())
        .at("capabilities")
        .at(0);
  }

  fs::path base_;
  fs::path root_;
  fs::path skills_;
};

// A three-file skill tree: SKILL.md, a reference page and a script below a subdirectory, one of
// them large enough to span several streamed chunks.
inline std::map<std::string, std::string> sample_tree(std::size_t big_bytes = 100) {
  return {{"SKILL.md", kBody},
          {"reference.md", "# Reference\n" + std::string(big_bytes, 'r')},
          {"scripts/run.sh", "#!/bin/sh\necho pdf\n"}};
}

}  // namespace ctx::skill_installer::testing

#endif  // CTX_TESTS_PLUGINS_SKILL_INSTALLER_SKILL_STORE_FIXTURE_HPP_
