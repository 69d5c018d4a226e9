#include "plugins/skill-installer/core/skill_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <optional>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"

namespace ctx::skill_installer {
namespace {

namespace pc = ctx::plugin_common;

constexpr std::string_view kSkillPrefix = "skill:";
constexpr std::size_t kMaxNameLength = 128;
constexpr char kSkillFile[] = "SKILL.md";

// Operating-system failure; the message names the action and errno's text, never a path.
[[noreturn]] void throw_os(std::string_view action) {
  const int error = errno;
  throw Error("skill-installer could not " + std::string(action) + ": " + std::strerror(error),
              ErrorCode::kInternal);
}

// A name unique within this process and across processes for staging files.
std::string staging_name(std::string_view stem) {
  static std::atomic<unsigned long> counter{0};
  return std::string(stem) + "." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1)) + ".tmp";
}

bool is_name_char(char c, bool first) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
  return !first && (c == '.' || c == '_' || c == '@' || c == '-');
}

void fsync_or_throw(int fd, std::string_view what) {
  if (::fsync(fd) != 0) throw_os("sync " + std::string(what));
}

// Creates directory `name` under `parent` (0700) unless present and opens it without following
// a symlink. Errors: InvalidArgument when something other than a directory is there.
FileDescriptor open_directory_at(int parent, const std::string& name) {
  if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) throw_os("create a directory");
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      throw InvalidArgument("skill-installer store layout is corrupt: " + name +
                            " is not a directory");
    }
    throw_os("open a directory");
  }
  return FileDescriptor(fd);
}

std::optional<FileDescriptor> open_optional(int dir, const std::string& name, int flags) {
  const int fd = ::openat(dir, name.c_str(), flags | O_CLOEXEC);
  if (fd >= 0) return FileDescriptor(fd);
  if (errno == ENOENT) return std::nullopt;
  if (errno == ELOOP || errno == ENOTDIR) return std::nullopt;  // not what we store: absent
  throw_os("open a store entry");
}

std::string read_all(int fd) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return bytes;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_os("read a store entry");
    }
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_os("write an object");
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Writes `bytes` as `dir`/`name` atomically: staging file in `staging_dir`, fsync, rename,
// directory fsync. The staging file is removed when anything fails.
void write_atomically(int staging_dir, int dir, const std::string& name, std::string_view bytes) {
  const std::string staging = staging_name(name);
  FileDescriptor file(::openat(staging_dir, staging.c_str(),
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (file.get() < 0) throw_os("create a staging file");
  try {
    write_all(file.get(), bytes);
    fsync_or_throw(file.get(), "an object");
    if (::close(file.release()) != 0) throw_os("close an object");
    if (::renameat(staging_dir, staging.c_str(), dir, name.c_str()) != 0) {
      throw_os("publish an object");
    }
  } catch (...) {
    ::unlinkat(staging_dir, staging.c_str(), 0);
    throw;
  }
  fsync_or_throw(dir, "the object directory");
}

const std::string& require_digest(const pc::Json& request, std::string_view what) {
  const std::string& hex = pc::require_string(request, "content_sha256", what);
  if (!pc::is_sha256_hex(hex)) {
    throw InvalidArgument(std::string(what) + " content_sha256 is not a lower-case sha-256 digest");
  }
  return hex;
}

std::string verification_digest(const std::string& capability_id, const std::string& stored) {
  const pc::Json record = {{"capability_id", capability_id},
                           {"material_sha256", stored},
                           {"object", "sha256/" + stored},
                           {"schema", kVerificationSchema}};
  return pc::sha256_hex(pc::dump(record));
}

std::string activation_verification_digest(const std::string& capability_id,
                                          const std::string& material, const std::string& hex) {
  return pc::sha256_hex(pc::dump({{"capability_id", capability_id},
                                  {"material_identity_digest", material},
                                  {"object", "sha256/" + hex},
                                  {"schema", kActivationVerificationSchema}}));
}

using pc::material_identity_digest;

}  // namespace

std::string skill_name(std::string_view capability_id) {
  if (capability_id.substr(0, kSkillPrefix.size()) != kSkillPrefix) {
    throw InvalidArgument("capability_id must start with \"skill:\"");
  }
  const std::string_view name = capability_id.substr(kSkillPrefix.size());
  bool valid = !name.empty() && name.size() <= kMaxNameLength;
  for (std::size_t i = 0; valid && i < name.size(); ++i) valid = is_name_char(name[i], i == 0);
  if (!valid) throw InvalidArgument("capability_id has an invalid skill name");
  return std::string(name);
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

int FileDescriptor::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

SkillStore::SkillStore(std::string_view config_json) {
  const pc::Json config = pc::parse_object(config_json, "skill-installer config");
  root_ = pc::require_string(config, "root", "skill-installer config");
  if (root_.empty() || root_.front() != '/' || root_.find('\0') != std::string::npos) {
    throw InvalidArgument("skill-installer config root must be an absolute path");
  }
  if (::mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST) throw_os("create the root");
  const int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      throw InvalidArgument("skill-installer root is not a directory (symlinks are refused)");
    }
    throw_os("open the root");
  }
  root_fd_ = FileDescriptor(fd);
  objects_fd_ = open_directory_at(root_fd_.get(), "sha256");
  active_fd_ = open_directory_at(root_fd_.get(), "active");
  tmp_fd_ = open_directory_at(root_fd_.get(), "tmp");
}

Json SkillStore::target_identity() const {
  struct stat st {};
  if (::lstat(root_.c_str(), &st) != 0) throw_os("stat the root");
  return Json{{"device", static_cast<std::uint64_t>(st.st_dev)},
              {"inode", static_cast<std::uint64_t>(st.st_ino)},
              {"owner", static_cast<std::uint64_t>(st.st_uid)},
              {"mode", static_cast<std::uint64_t>(st.st_mode)},
              {"path", root_}};
}

void SkillStore::require_same_root() const {
  struct stat named {};
  struct stat opened {};
  if (::fstat(root_fd_.get(), &opened) != 0) throw_os("stat the root");
  if (::lstat(root_.c_str(), &named) != 0 || named.st_dev != opened.st_dev ||
      named.st_ino != opened.st_ino) {
    throw Error("skill-installer root changed since the instance was created",
                ErrorCode::kFailedPrecondition);
  }
}

SkillStore::Object SkillStore::read_object(const std::string& hex) const {
  const auto file = open_optional(objects_fd_.get(), hex, O_RDONLY | O_NOFOLLOW);
  if (!file) return {};
  struct stat st {};
  if (::fstat(file->get(), &st) != 0) throw_os("stat an object");
  if (!S_ISREG(st.st_mode)) return {};
  const std::string bytes = read_all(file->get());
  return Object{pc::sha256_hex(bytes), bytes.size()};
}

Json SkillStore::install(std::string_view request_json) {
  constexpr std::string_view kWhat = "install request";
  const pc::Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  skill_name(capability_id);
  const std::string& expected = require_digest(request, kWhat);
  const auto text = pc::optional_string(request, "content", kWhat);
  const auto base64 = pc::optional_string(request, "content_base64", kWhat);
  if (text.has_value() == base64.has_value()) {
    throw InvalidArgument("install request needs exactly one of content, content_base64");
  }
  const std::string content = text ? *text : pc::from_base64(*base64, "install request content");

  const std::string received = pc::sha256_hex(content);
  Json reply = {{"capability_id", capability_id},
                {"observed_material_identity_digest",
                 material_identity_digest(capability_id, received, content.size())}};
  if (received != expected) {
    reply["outcome"] = "failed";
    reply["reason"] = "content digest mismatch";
    return reply;
  }
  require_same_root();
  if (hash_object(expected) != expected) {
    write_atomically(tmp_fd_.get(), objects_fd_.get(), expected, content);
  }
  const std::string stored = hash_object(expected);
  if (stored != expected) {
    reply["outcome"] = "failed";
    reply["reason"] = "stored object does not verify";
    return reply;
  }
  reply["outcome"] = "applied";
  reply["verification_digest"] = verification_digest(capability_id, stored);
  return reply;
}

Json SkillStore::activate(std::string_view request_json) {
  constexpr std::string_view kWhat = "activate request";
  const pc::Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = skill_name(capability_id);
  const std::string& hex = require_digest(request, kWhat);

  Json reply = {{"capability_id", capability_id}};
  require_same_root();
  const Object object = read_object(hex);
  if (object.sha256 != hex) {
    reply["outcome"] = "failed";
    reply["reason"] = "material is not installed";
    return reply;
  }
  const FileDescriptor dir = open_directory_at(active_fd_.get(), name);
  const std::string staging = staging_name(kSkillFile);
  const std::string target = "../../sha256/" + hex;
  if (::symlinkat(target.c_str(), dir.get(), staging.c_str()) != 0) throw_os("stage a link");
  if (::renameat(dir.get(), staging.c_str(), dir.get(), kSkillFile) != 0) {
    ::unlinkat(dir.get(), staging.c_str(), 0);
    throw_os("publish a link");
  }
  fsync_or_throw(dir.get(), "the skill directory");
  fsync_or_throw(active_fd_.get(), "the active directory");
  const std::string material = material_identity_digest(capability_id, hex, object.bytes);
  reply["outcome"] = "applied";
  reply["active_sha256"] = hex;
  reply["observed_material_identity_digest"] = material;
  reply["verification_digest"] = activation_verification_digest(capability_id, material, hex);
  return reply;
}

Json SkillStore::deactivate(std::string_view request_json) {
  constexpr std::string_view kWhat = "deactivate request";
  const pc::Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = skill_name(capability_id);

  require_same_root();
  bool was_active = false;
  if (const auto dir = open_optional(active_fd_.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) {
    if (::unlinkat(dir->get(), kSkillFile, 0) == 0) {
      was_active = true;
      fsync_or_throw(dir->get(), "the skill directory");
    } else if (errno != ENOENT) {
      throw_os("remove a link");
    }
    // The skill directory goes too when nothing else is left in it.
    if (::unlinkat(active_fd_.get(), name.c_str(), AT_REMOVEDIR) == 0) {
      fsync_or_throw(active_fd_.get(), "the active directory");
    }
  }
  return Json{{"capability_id", capability_id}, {"outcome", "applied"}, {"was_active", was_active}};
}

Json SkillStore::reconcile(std::string_view request_json) const {
  constexpr std::string_view kWhat = "reconcile request";
  const pc::Json request = pc::parse_object(request_json, kWhat);
  const auto list = request.find("capabilities");
  if (list == request.end() || !list->is_array()) {
    throw InvalidArgument("reconcile request needs an array \"capabilities\"");
  }
  require_same_root();
  Json states = Json::array();
  for (const pc::Json& item : *list) {
    if (!item.is_object()) throw InvalidArgument("reconcile request capabilities must be objects");
    const std::string& capability_id = pc::require_string(item, "capability_id", kWhat);
    const std::string name = skill_name(capability_id);
    const std::string& hex = require_digest(item, kWhat);

    const bool installed = hash_object(hex) == hex;
    Json active_sha256 = nullptr;
    Json active_material = nullptr;
    if (const auto dir =
            open_optional(active_fd_.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) {
      if (const auto file = open_optional(dir->get(), kSkillFile, O_RDONLY)) {
        const std::string bytes = read_all(file->get());
        active_sha256 = pc::sha256_hex(bytes);
        active_material = material_identity_digest(capability_id, active_sha256.get<std::string>(),
                                                   bytes.size());
      }
    }
    const bool active = installed && active_sha256 == hex;
    states.push_back(
        {{"capability_id", capability_id},
         {"content_sha256", hex},
         {"installed", installed},
         {"active", active},
         {"active_sha256", active_sha256},
         {"active_material_identity_digest", active_material},
         {"verification_digest",
          active ? Json(activation_verification_digest(capability_id, active_material, hex))
                 : Json(nullptr)}});
  }
  return Json{{"capabilities", states}};
}

}  // namespace ctx::skill_installer
