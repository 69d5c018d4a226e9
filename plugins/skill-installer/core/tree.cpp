#include "plugins/skill-installer/core/tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctx/sdk/error.hpp>
#include <utility>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"
#include "plugins/skill-installer/core/fs.hpp"

namespace ctx::skill_installer {
namespace {

using Json = plugin_common::Json;
using sdk::is_tree_component;
using sdk::kMaxTreeDepth;
using sdk::tree_manifest_text;
using sdk::TreeFile;
constexpr std::size_t kChunk = 1 << 16;

}  // namespace

std::optional<TreeFile> hash_file(int dir, const std::string& name, const std::string& path) {
  auto file = open_optional(dir, name, O_RDONLY);
  if (!file) return std::nullopt;
  const struct stat st = fstat_or_throw(file->get());
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  Sha256Stream hash;
  std::uint64_t bytes = 0;
  char buffer[kChunk];
  for (;;) {
    const ssize_t n = ::read(file->get(), buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_os("read an installed file");
    }
    hash.update(std::string_view(buffer, static_cast<std::size_t>(n)));
    bytes += static_cast<std::uint64_t>(n);
  }
  return TreeFile{path, bytes, hash.hex()};
}

bool collect_tree(int dir, const std::string& prefix, std::size_t depth,
                  std::vector<TreeFile>& files) {
  if (depth > kMaxTreeDepth) return false;
  for (const std::string& name : list_directory(dir)) {
    if (!is_tree_component(name)) return false;
    const std::string path = prefix.empty() ? name : prefix + "/" + name;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    if (S_ISDIR(st.st_mode)) {
      auto child = open_optional(dir, name, O_RDONLY | O_DIRECTORY);
      if (!child || !collect_tree(child->get(), path, depth + 1, files)) return false;
    } else if (S_ISREG(st.st_mode)) {
      auto file = hash_file(dir, name, path);
      if (!file) return false;
      files.push_back(std::move(*file));
    } else {
      return false;
    }
  }
  return true;
}

std::optional<std::string> tree_root_of(const std::vector<TreeFile>& files) {
  try {
    return sdk::tree_root_text(files, plugin_common::sha256_hex(tree_manifest_text(files)));
  } catch (const InvalidArgument&) {
    return std::nullopt;
  }
}

std::vector<TreeFile> parse_manifest(const std::string& text) {
  Json manifest;
  try {
    manifest = Json::parse(text);
  } catch (const Json::exception&) {
    throw InvalidArgument("install request manifest is not JSON");
  }
  const auto list = manifest.is_object() ? manifest.find("files") : manifest.end();
  if (!manifest.is_object() || list == manifest.end() || !list->is_array()) {
    throw InvalidArgument("install request manifest has no \"files\" array");
  }
  std::vector<TreeFile> files;
  for (const Json& item : *list) {
    const auto path = item.is_object() ? item.find("path") : item.end();
    const auto bytes = item.is_object() ? item.find("bytes") : item.end();
    const auto sha = item.is_object() ? item.find("sha256") : item.end();
    if (!item.is_object() || path == item.end() || !path->is_string() || bytes == item.end() ||
        !bytes->is_number_unsigned() || sha == item.end() || !sha->is_string()) {
      throw InvalidArgument("install request manifest has a malformed file entry");
    }
    files.push_back(
        {path->get<std::string>(), bytes->get<std::uint64_t>(), sha->get<std::string>()});
  }
  std::string canonical;
  try {
    canonical = tree_manifest_text(files);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("install request manifest is not a skill tree manifest");
  }
  if (canonical != text) {
    throw InvalidArgument("install request manifest is not the canonical manifest text");
  }
  return files;
}

}  // namespace ctx::skill_installer
