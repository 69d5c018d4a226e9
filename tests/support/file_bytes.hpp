// The whole content of a file as bytes (empty when it cannot be read), and of a SQLite database
// with its write-ahead log (which holds the committed pages until a checkpoint). Header-only.
#ifndef CTX_TESTS_SUPPORT_FILE_BYTES_HPP_
#define CTX_TESTS_SUPPORT_FILE_BYTES_HPP_

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace ctx::testing {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string read_database(const std::filesystem::path& path) {
  return read_file(path) + '\0' + read_file(path.string() + "-wal");
}

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_FILE_BYTES_HPP_
