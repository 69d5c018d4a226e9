// Helpers for the plugin-layer tests: a private temporary directory, file copies and byte edits.
#ifndef CTX_TESTS_HOST_PLUGINS_PLUGIN_TEST_SUPPORT_HPP_
#define CTX_TESTS_HOST_PLUGINS_PLUGIN_TEST_SUPPORT_HPP_

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace ctx::testing {

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes `bytes` to `path` in place (truncating; the inode is kept when the file exists).
inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Copies `from` to `to` with mode 0755 and returns `to`.
inline std::filesystem::path copy_plugin(const std::filesystem::path& from,
                                         const std::filesystem::path& to) {
  write_bytes(to, read_bytes(from));
  ::chmod(to.c_str(), 0755);
  return to;
}

// Flips every bit of the byte at `offset` (in place).
inline void flip_byte(const std::filesystem::path& path, std::size_t offset) {
  std::string bytes = read_bytes(path);
  if (offset >= bytes.size()) throw std::runtime_error("offset past the end");
  bytes[offset] = static_cast<char>(~bytes[offset]);
  write_bytes(path, bytes);
}

// Names of the entries of `dir` (empty when it does not exist).
inline std::vector<std::string> list_dir(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

}  // namespace ctx::testing

#endif  // CTX_TESTS_HOST_PLUGINS_PLUGIN_TEST_SUPPORT_HPP_
