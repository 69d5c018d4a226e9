#include "plugins/common/single_file_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctx/sdk/error.hpp>
#include <ctx/support/fs.hpp>
#include <ctx/support/unique_fd.hpp>
#include <filesystem>
#include <vector>

#include "plugins/common/bytes.hpp"
#include "plugins/common/host_file.hpp"
#include "plugins/common/json_input.hpp"

namespace ctx::plugin_common {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunk = 1 << 16;
constexpr std::size_t kMaxName = 64;
constexpr std::string_view kStageSuffix = ".stage";
constexpr std::size_t kMaxRecordBytes = 1 << 20;

using Fd = support::UniqueFd;
using support::fsync_directory;  // best effort where called: the file itself was fsynced

bool ends_with(std::string_view text, std::string_view suffix) noexcept {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> out;
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) return out;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(stream);
  return out;
}

// Reads a whole regular file (no symlink) of at most `limit` bytes; nullopt when absent, not a
// regular file or larger.
std::optional<std::string> read_regular(const std::string& file, std::size_t limit) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) > limit) {
    return std::nullopt;
  }
  std::string out;
  char buffer[kChunk];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > limit) return std::nullopt;
  }
  return out;
}

void make_directory(const std::string& path, mode_t mode, const std::string& who) {
  if (::mkdir(path.c_str(), mode) == 0) {
    fsync_directory(fs::path(path).parent_path());
  } else if (errno != EEXIST) {
    throw_errno(who, "create a store directory");
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw InvalidArgument(who + " store layout is corrupt");
  }
}

}  // namespace

SingleFileStore::SingleFileStore(const std::string& root, Options options)
    : options_(std::move(options)) {
  const std::string& who = options_.plugin_id;
  if (root.empty() || root.front() != '/' || root.find('\0') != std::string::npos) {
    throw InvalidArgument(who + " config root must be an absolute path");
  }
  root_ = root;
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  std::error_code ec;
  fs::create_directories(fs::path(root_).parent_path(), ec);
  if (::mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST) throw_errno(who, "create the root");
  struct stat st {};
  if (::lstat(root_.c_str(), &st) != 0) throw_errno(who, "stat the root");
  if (!S_ISDIR(st.st_mode)) {
    throw InvalidArgument(who + " root is not a directory (symlinks are refused)");
  }
  if (st.st_uid != ::geteuid()) {
    throw Error(who + " root is owned by another user", ErrorCode::kPermissionDenied);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw Error(who + " root is writable by group or others", ErrorCode::kPermissionDenied);
  }
  opened_ = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
             static_cast<std::uint64_t>(st.st_uid), static_cast<std::uint64_t>(st.st_mode)};
  for (const char* sub : {"objects", "tmp", "records"}) make_directory(path(sub), 0700, who);
  sweep_stale_staging();
}

SingleFileStore::Json SingleFileStore::target_identity() const {
  struct stat st {};
  if (::lstat(root_.c_str(), &st) != 0) throw_errno(options_.plugin_id, "stat the root");
  return Json{{"device", static_cast<std::uint64_t>(st.st_dev)},
              {"inode", static_cast<std::uint64_t>(st.st_ino)},
              {"owner", static_cast<std::uint64_t>(st.st_uid)},
              {"mode", static_cast<std::uint64_t>(st.st_mode)},
              {"path", root_}};
}

void SingleFileStore::require_same_root() const {
  struct stat st {};
  if (::lstat(root_.c_str(), &st) != 0 || static_cast<std::uint64_t>(st.st_dev) != opened_.device ||
      static_cast<std::uint64_t>(st.st_ino) != opened_.inode ||
      static_cast<std::uint64_t>(st.st_uid) != opened_.owner ||
      static_cast<std::uint64_t>(st.st_mode) != opened_.mode) {
    throw Error(options_.plugin_id + " root changed since the instance was created",
                ErrorCode::kFailedPrecondition);
  }
}

std::string SingleFileStore::name_of(std::string_view capability_id) const {
  const std::string prefix = options_.kind + ":";
  if (capability_id.substr(0, prefix.size()) != prefix) {
    throw InvalidArgument("capability_id must start with \"" + prefix + "\"");
  }
  const std::string_view name = capability_id.substr(prefix.size());
  bool valid = !name.empty() && name.size() <= kMaxName;
  for (std::size_t i = 0; valid && i < name.size(); ++i) {
    const char c = name[i];
    valid = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '-' || c == '_'));
  }
  if (!valid) throw InvalidArgument("capability_id has an invalid " + options_.kind + " name");
  return std::string(name);
}

std::string SingleFileStore::material_identity(std::string_view capability_id,
                                               std::string_view bytes) {
  return material_identity_digest(capability_id, sha256_hex(bytes), bytes.size());
}

SingleFileStore::Object SingleFileStore::read(const std::string& hex) const {
  Object out;
  struct stat st {};
  const std::string file = path("objects/" + hex);
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return out;
    throw_errno(options_.plugin_id, "stat an object");
  }
  auto bytes = read_regular(file, options_.max_bytes);
  if (!bytes || sha256_hex(*bytes) != hex) {
    out.state = State::kCorrupt;
    return out;
  }
  out.state = State::kVerified;
  out.bytes = std::move(*bytes);
  return out;
}

std::optional<SingleFileStore::Json> SingleFileStore::read_record(const std::string& key) const {
  const auto text = read_regular(path("records/" + key + ".json"), kMaxRecordBytes);
  if (!text) return std::nullopt;
  try {
    return parse_object(*text, "record");
  } catch (const Error&) {
    return std::nullopt;
  }
}

void SingleFileStore::write_record(const std::string& key, const Json& record) {
  write_private_file(path("records/" + key + ".json"), dump(record));
}

void SingleFileStore::remove_record(const std::string& key) {
  const std::string file = path("records/" + key + ".json");
  if (::unlink(file.c_str()) != 0) {
    if (errno == ENOENT) return;
    throw_errno(options_.plugin_id, "remove a record");
  }
  fsync_directory(path("records"));
}

int SingleFileStore::sweep_stale_staging() {
  int removed = 0;
  for (const std::string& name : entries_of(path("tmp"))) {
    const std::string file = path("tmp/" + name);
    if (ends_with(name, kStageSuffix)) {
      Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
      if (fd.valid() && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // writer alive
    }
    if (::unlink(file.c_str()) == 0) ++removed;
  }
  if (removed > 0) fsync_directory(path("tmp"));
  return removed;
}

std::optional<std::string> SingleFileStore::request_body(const Json& request) const {
  if (const auto it = request.find("content"); it != request.end()) {
    if (!it->is_string()) throw InvalidArgument("install request content must be a string");
    return it->get<std::string>();
  }
  if (const auto b64 = request.find("content_base64"); b64 != request.end()) {
    if (!b64->is_string()) {
      throw InvalidArgument("install request content_base64 must be a string");
    }
    return from_base64(b64->get_ref<const std::string&>(), "install request content_base64");
  }
  const Json& source = request.at("source");
  if (!source.is_object() || source.size() != 1 || !source.contains("file") ||
      !source.at("file").is_string()) {
    throw InvalidArgument("install request source needs exactly one string \"file\"");
  }
  const std::string& file = source.at("file").get_ref<const std::string&>();
  if (file.empty() || file.front() != '/') {
    throw InvalidArgument("install request source file must be an absolute path");
  }
  return read_regular(file, options_.max_bytes);
}

void SingleFileStore::publish(const std::string& expected, const std::string& body) const {
  static std::atomic<unsigned long> counter{0};
  const std::string stage = path("tmp/" + expected + "." + std::to_string(::getpid()) + "." +
                                 std::to_string(counter.fetch_add(1)) + std::string(kStageSuffix));
  Fd fd(::open(stage.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) throw_errno(options_.plugin_id, "create a staging file");
  bool published = false;
  struct Cleanup {
    const std::string& file;
    const bool& published;
    ~Cleanup() {
      if (!published) ::unlink(file.c_str());
    }
  } cleanup{stage, published};
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) throw_errno(options_.plugin_id, "lock staging");
  for (std::size_t at = 0; at < body.size() || at == 0; at += kChunk) {
    if (options_.cancelled && options_.cancelled()) {
      throw Error(options_.plugin_id + " install was cancelled", ErrorCode::kCancelled);
    }
    const std::size_t n = std::min(kChunk, body.size() - at);
    std::size_t written = 0;
    while (written < n) {
      const ssize_t w = ::write(fd.get(), body.data() + at + written, n - written);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw_errno(options_.plugin_id, "write a staging file");
      written += static_cast<std::size_t>(w);
    }
    if (body.empty()) break;
  }
  if (::fchmod(fd.get(), 0444) != 0) throw_errno(options_.plugin_id, "seal a staging file");
  if (::fsync(fd.get()) != 0) throw_errno(options_.plugin_id, "sync a staging file");
  const std::string object = path("objects/" + expected);
  if (::rename(stage.c_str(), object.c_str()) != 0) {
    throw_errno(options_.plugin_id, "publish an installed object");
  }
  published = true;
  fsync_directory(path("objects"));
  fsync_directory(path("tmp"));
}

SingleFileStore::Stored SingleFileStore::store(const std::string& name, const std::string& body) {
  Stored out;
  if (body.size() > options_.max_bytes) {
    out.refused = "material exceeds the size cap";
    return out;
  }
  if (options_.validate) {
    if (auto reason = options_.validate(name, body)) {
      out.refused = std::move(reason);
      return out;
    }
  }
  const std::string hex = sha256_hex(body);
  require_same_root();
  if (read(hex).state == State::kVerified) return out;
  publish(hex, body);
  out.rewritten = true;
  return out;
}

SingleFileStore::Json SingleFileStore::install(std::string_view request_json) {
  constexpr std::string_view kWhat = "install request";
  const Json request = parse_object(request_json, kWhat);
  const std::string& capability_id = require_string(request, "capability_id", kWhat);
  const std::string name = name_of(capability_id);
  const std::string& expected = require_string(request, "content_sha256", kWhat);
  if (!is_sha256_hex(expected)) {
    throw InvalidArgument("install request content_sha256 is not a lower-case sha-256 digest");
  }
  const int sources = int(request.contains("content")) + int(request.contains("content_base64")) +
                      int(request.contains("source"));
  if (sources != 1) {
    throw InvalidArgument("install request needs exactly one of content, content_base64, source");
  }
  std::optional<std::uint64_t> expected_bytes;
  if (const auto it = request.find("content_bytes"); it != request.end()) {
    if (!it->is_number_unsigned()) {
      throw InvalidArgument("install request content_bytes must be an unsigned integer");
    }
    expected_bytes = it->get<std::uint64_t>();
  }
  const auto expected_material = optional_string(request, "material_identity_digest", kWhat);
  if (expected_material && !is_sha256_hex(*expected_material)) {
    throw InvalidArgument("install request material_identity_digest is not a sha-256 digest");
  }
  if (request.contains("manifest")) {
    throw InvalidArgument("install request manifest: " + options_.plugin_id +
                          " installs single-file material only");
  }

  Json reply = {{"capability_id", capability_id}, {"form", "file"}};
  const auto refuse = [&](const std::string& reason) {
    reply["outcome"] = "failed";
    reply["reason"] = reason;
    return reply;
  };

  const std::optional<std::string> requested = request_body(request);
  if (!requested) return refuse("material source could not be read or exceeds the size cap");
  const std::string& body = *requested;
  if (body.size() > options_.max_bytes) return refuse("material exceeds the size cap");

  const std::string observed = sha256_hex(body);
  const std::string material = material_identity_digest(capability_id, observed, body.size());
  reply["observed_material_identity_digest"] = material;
  if (observed != expected) return refuse("content digest mismatch");
  if (expected_bytes && *expected_bytes != body.size()) return refuse("content size mismatch");
  if (expected_material && *expected_material != material) {
    return refuse("material identity digest mismatch");
  }
  if (options_.validate) {
    if (auto reason = options_.validate(name, body)) return refuse(*reason);
  }
  const auto applied = [&](bool rewritten) {
    reply["outcome"] = "applied";
    reply["rewritten"] = rewritten;
    reply["verification_digest"] = sha256_hex(dump({{"capability_id", capability_id},
                                                    {"material_identity_digest", material},
                                                    {"object", "objects/" + expected},
                                                    {"schema", options_.verification_schema}}));
    return reply;
  };

  require_same_root();
  const Object existing = read(expected);
  if (existing.state == State::kVerified) return applied(false);

  publish(expected, body);
  return applied(true);
}

}  // namespace ctx::plugin_common
