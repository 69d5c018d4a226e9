#include "plugins/skill-installer/core/skill_store.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <ctx/sdk/skill_tree.hpp>
#include <functional>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"
#include "plugins/skill-installer/core/tree.hpp"

namespace ctx::skill_installer {
namespace {

namespace pc = ctx::plugin_common;
using sdk::is_tree_component;
using sdk::kMaxTreeDepth;
using sdk::kSkillFile;
using sdk::tree_manifest_text;
using sdk::TreeFile;

constexpr std::string_view kSkillPrefix = "skill:";
constexpr std::size_t kMaxNameLength = 128;
constexpr std::size_t kChunk = 1 << 16;
// The defaults are the shared tree bounds (ctx/sdk/skill_tree.hpp): whatever ctx's catalog
// imports installs under them.
constexpr std::uint64_t kDefaultFileBytes = sdk::kMaxTreeFileBytes;
constexpr std::uint64_t kDefaultTreeBytes = sdk::kMaxTreeBytes;
constexpr std::uint64_t kDefaultFiles = sdk::kMaxTreeFiles;
constexpr char kStageSuffix[] = ".stage";
constexpr char kBadSuffix[] = ".bad";
constexpr char kLinkPrefix[] = ".ctx-";
constexpr char kLinkSuffix[] = ".link";

// Material the store refuses to install: an outcome "failed" with this fixed reason (never a
// path or content), not an error.
struct MaterialRefused {
  std::string reason;
};

bool is_name_char(char c, bool first) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
  return !first && (c == '.' || c == '_' || c == '@' || c == '-');
}

bool ends_with(std::string_view text, std::string_view suffix) noexcept {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool starts_with(std::string_view text, std::string_view prefix) noexcept {
  return text.substr(0, prefix.size()) == prefix;
}

// A name unique within this process and across processes, for staging entries.
std::string unique_suffix() {
  static std::atomic<unsigned long> counter{0};
  // Appended, not "." + ... (GCC 12 -O3 reports a false -Wrestrict in operator+ here).
  std::string out = ".";
  out += std::to_string(::getpid());
  out += '.';
  out += std::to_string(counter.fetch_add(1));
  return out;
}

// The root rules: a directory owned by this euid and not writable by group or others.
void require_private(const struct stat& st, std::string_view what) {
  if (!S_ISDIR(st.st_mode)) {
    throw InvalidArgument("skill-installer " + std::string(what) + " is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    throw Error("skill-installer " + std::string(what) + " is owned by another user",
                ErrorCode::kPermissionDenied);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw Error("skill-installer " + std::string(what) + " is writable by group or others",
                ErrorCode::kPermissionDenied);
  }
}

std::string absolute_path(const Json& config, const char* key) {
  const std::string& path = pc::require_string(config, key, "skill-installer config");
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string::npos) {
    throw InvalidArgument("skill-installer config " + std::string(key) +
                          " must be an absolute path");
  }
  std::string out = path;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::uint64_t cap(const Json& config, const char* key, std::uint64_t fallback) {
  const auto it = config.find(key);
  if (it == config.end()) return fallback;
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0) {
    throw InvalidArgument("skill-installer config " + std::string(key) +
                          " must be a positive integer");
  }
  return it->get<std::uint64_t>();
}

// Creates `path` (and missing ancestors, `mode`) and opens it O_DIRECTORY|O_NOFOLLOW.
FileDescriptor open_or_create_root(const std::string& path, mode_t mode, std::string_view what) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (::mkdir(prefix.c_str(), mode) == 0) {
      const std::size_t parent_end = prefix.rfind('/');
      const std::string parent = parent_end == 0 ? "/" : prefix.substr(0, parent_end);
      FileDescriptor parent_fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (parent_fd.valid()) fsync_or_throw(parent_fd.get(), "a directory");
    } else if (errno != EEXIST) {
      throw_os("create the " + std::string(what));
    }
    if (slash == std::string::npos) break;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      throw InvalidArgument("skill-installer " + std::string(what) +
                            " is not a directory (symlinks are refused)");
    }
    throw_os("open the " + std::string(what));
  }
  FileDescriptor out(fd);
  require_private(fstat_or_throw(out.get()), what);
  return out;
}

const std::string& require_digest(const Json& request, std::string_view what) {
  const std::string& hex = pc::require_string(request, "content_sha256", what);
  if (!pc::is_sha256_hex(hex)) {
    throw InvalidArgument(std::string(what) + " content_sha256 is not a lower-case sha-256 digest");
  }
  return hex;
}

std::string install_verification_digest(const std::string& capability_id,
                                        const std::string& material, const std::string& hex) {
  return pc::sha256_hex(pc::dump({{"capability_id", capability_id},
                                  {"material_identity_digest", material},
                                  {"object", "objects/" + hex},
                                  {"schema", kVerificationSchema}}));
}

std::string activation_verification_digest(const std::string& capability_id,
                                           const std::string& name, const std::string& material,
                                           const std::string& hex) {
  return pc::sha256_hex(pc::dump({{"activation", name},
                                  {"capability_id", capability_id},
                                  {"material_identity_digest", material},
                                  {"object", "objects/" + hex},
                                  {"schema", kActivationVerificationSchema}}));
}

bool pid_alive(const std::string& text) {
  try {
    const long pid = std::stol(text);
    if (pid <= 0 || pid > INT_MAX) return false;
    return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
  } catch (const std::exception&) {
    return false;
  }
}

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

// One staging directory under tmp/, flock'ed while this object lives; removed unless published.
struct SkillStore::Staged {
  int tmp = -1;
  std::string name;
  FileDescriptor dir;
  bool published = false;
  std::vector<TreeFile> files;
  std::uint64_t tree_bytes = 0;

  Staged() = default;
  Staged(Staged&&) noexcept = default;
  Staged& operator=(Staged&&) = delete;
  ~Staged() {
    if (published || name.empty() || tmp < 0) return;
    try {
      remove_tree_at(tmp, name);
      ::fsync(tmp);
    } catch (...) {  // a sweep removes what is left once this process is gone
    }
  }
};

SkillStore::SkillStore(std::string_view config_json, CancelCheck cancelled)
    : cancelled_(std::move(cancelled)) {
  const Json config = pc::parse_object(config_json, "skill-installer config");
  for (const auto& [key, value] : config.items()) {
    if (key != "root" && key != "activation_root" && key != "max_file_bytes" &&
        key != "max_tree_bytes" && key != "max_files") {
      throw InvalidArgument("skill-installer config has an unknown field");
    }
  }
  root_ = absolute_path(config, "root");
  activation_root_ =
      config.contains("activation_root") ? absolute_path(config, "activation_root") : "";
  caps_ = Caps{cap(config, "max_file_bytes", kDefaultFileBytes),
               cap(config, "max_tree_bytes", kDefaultTreeBytes),
               cap(config, "max_files", kDefaultFiles)};
  root_fd_ = open_or_create_root(root_, 0700, "root");
  objects_fd_ = open_directory_at(root_fd_.get(), "objects", 0700);
  tmp_fd_ = open_directory_at(root_fd_.get(), "tmp", 0700);
  if (activation_root_.empty()) {
    activation_root_ = root_ + "/active";
    activation_fd_ = open_directory_at(root_fd_.get(), "active", 0700);
    require_private(fstat_or_throw(activation_fd_.get()), "activation root");
  } else {
    activation_fd_ = open_or_create_root(activation_root_, 0755, "activation root");
  }
  sweep_stale_staging();
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
  const struct stat opened = fstat_or_throw(root_fd_.get());
  if (::lstat(root_.c_str(), &named) != 0 || named.st_dev != opened.st_dev ||
      named.st_ino != opened.st_ino || named.st_uid != opened.st_uid ||
      named.st_mode != opened.st_mode) {
    throw Error("skill-installer root changed since the instance was created",
                ErrorCode::kFailedPrecondition);
  }
  require_private(opened, "root");
  require_private(fstat_or_throw(activation_fd_.get()), "activation root");
}

int SkillStore::sweep_stale_staging() {
  int removed = 0;
  for (const std::string& name : list_directory(tmp_fd_.get())) {
    if (ends_with(name, kBadSuffix)) {
      remove_tree_at(tmp_fd_.get(), name);
      ++removed;
      continue;
    }
    if (!ends_with(name, kStageSuffix)) continue;
    auto dir = open_optional(tmp_fd_.get(), name, O_RDONLY | O_DIRECTORY);
    if (!dir) {  // not a directory: never ours in use
      remove_tree_at(tmp_fd_.get(), name);
      ++removed;
      continue;
    }
    if (!try_lock(dir->get())) continue;  // its writer is alive
    remove_tree_at(tmp_fd_.get(), name);
    ++removed;
  }
  if (removed > 0) fsync_or_throw(tmp_fd_.get(), "the staging directory");
  // Activation links staged by a process that died before renaming them.
  bool unlinked = false;
  for (const std::string& name : list_directory(activation_fd_.get())) {
    if (!starts_with(name, kLinkPrefix) || !ends_with(name, kLinkSuffix)) continue;
    const std::string middle = name.substr(0, name.size() - std::strlen(kLinkSuffix));
    const std::size_t last = middle.rfind('.');
    const std::size_t pid_dot = last == std::string::npos ? last : middle.rfind('.', last - 1);
    if (pid_dot == std::string::npos) continue;
    if (pid_alive(middle.substr(pid_dot + 1, last - pid_dot - 1))) continue;
    if (::unlinkat(activation_fd_.get(), name.c_str(), 0) == 0) unlinked = true;
  }
  if (unlinked) fsync_or_throw(activation_fd_.get(), "the activation root");
  return removed;
}

SkillStore::Object SkillStore::inspect_object(const std::string& hex) const {
  struct stat st {};
  if (::fstatat(objects_fd_.get(), hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    throw_os("stat an installed object");
  }
  Object out;
  out.state = Object::State::kCorrupt;
  auto dir = S_ISDIR(st.st_mode) ? open_optional(objects_fd_.get(), hex, O_RDONLY | O_DIRECTORY)
                                 : std::nullopt;
  std::vector<TreeFile> files;
  if (!dir || !collect_tree(dir->get(), "", 1, files)) return out;
  if (files.size() == 1 && files[0].path == kSkillFile && files[0].sha256 == hex) {
    return Object{Object::State::kVerified, Form::kFile, files[0].bytes};
  }
  // No SKILL.md or bad paths: not an object we wrote.
  if (const auto root = tree_root_of(files); root && pc::sha256_hex(*root) == hex) {
    return Object{Object::State::kVerified, Form::kTree, root->size()};
  }
  return out;
}

bool SkillStore::live_staging_for(const std::string& hex) const {
  for (const std::string& name : list_directory(tmp_fd_.get())) {
    if (!starts_with(name, hex + ".") || !ends_with(name, kStageSuffix)) continue;
    auto dir = open_optional(tmp_fd_.get(), name, O_RDONLY | O_DIRECTORY);
    if (dir && !try_lock(dir->get())) return true;
  }
  return false;
}

std::string SkillStore::object_link(const std::string& hex) const {
  return root_ + "/objects/" + hex;
}

// The object hex the slot links to; "" when the slot is empty; nullopt when it holds something
// ctx did not create.
std::optional<std::string> SkillStore::slot_target(const std::string& name) const {
  struct stat st {};
  if (::fstatat(activation_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::string();
    throw_os("stat an activation slot");
  }
  if (!S_ISLNK(st.st_mode)) return std::nullopt;
  char buffer[PATH_MAX];
  const ssize_t n = ::readlinkat(activation_fd_.get(), name.c_str(), buffer, sizeof buffer);
  if (n < 0) throw_os("read an activation slot");
  const std::string target(buffer, static_cast<std::size_t>(n));
  const std::string prefix = root_ + "/objects/";
  if (!starts_with(target, prefix)) return std::nullopt;
  const std::string hex = target.substr(prefix.size());
  if (!pc::is_sha256_hex(hex)) return std::nullopt;
  return hex;
}

// Writes the files of one staging directory: each streamed, hashed and capped as it arrives (a
// tree's file also checked against its manifest entry, never more bytes than listed), and all
// fsynced together before stage() returns, so before the publishing rename: the writeback of
// each starts when it is finished, so the syncs overlap instead of each waiting alone.
class SkillStore::StageWriter {
 public:
  StageWriter(Staged& staged, const Caps& caps, const CancelCheck& cancelled,
              const std::vector<TreeFile>* listed)
      : staged_(staged), caps_(caps), cancelled_(cancelled), listed_(listed) {
    if (listed != nullptr) {
      for (const TreeFile& file : *listed) entries_.emplace(file.path, &file);
    }
  }

  // Streams `source` (a readable descriptor) into a new file `name` of `dir` as tree path `path`.
  void stream_file(int source, int dir, const std::string& name, const std::string& path) {
    if (staged_.files.size() >= caps_.files) throw MaterialRefused{"material has too many files"};
    const TreeFile* entry = nullptr;
    if (listed_ != nullptr) {
      const auto found = entries_.find(path);
      if (found == entries_.end()) {
        throw MaterialRefused{"material source holds a file its manifest does not list"};
      }
      entry = found->second;
    }
    FileDescriptor out = create_file(dir, name);
    Sha256Stream hash;
    std::uint64_t bytes = 0;
    char buffer[kChunk];
    for (;;) {
      poll();
      const ssize_t n = ::read(source, buffer, sizeof buffer);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        throw MaterialRefused{"material source could not be read"};
      }
      add_bytes(bytes, static_cast<std::uint64_t>(n), entry);
      const std::string_view chunk(buffer, static_cast<std::size_t>(n));
      hash.update(chunk);
      write_all(out.get(), chunk);
    }
    finish(std::move(out), TreeFile{path, bytes, hash.hex()}, entry);
  }

  // The listed files, in manifest order, each read once from the host's `bodies`. Their
  // directories are created as the paths need them and sealed and synced once their files exist
  // (deepest first: a directory's path sorts after its parent's).
  void write_from_host(const BodyReader& bodies) {
    std::map<std::string, FileDescriptor> dirs;
    for (const TreeFile& entry : *listed_) {
      int parent = staged_.dir.get();
      std::size_t start = 0;
      for (std::size_t slash = entry.path.find('/'); slash != std::string::npos;
           slash = entry.path.find('/', slash + 1)) {
        const std::string dir_path = entry.path.substr(0, slash);
        auto it = dirs.find(dir_path);
        if (it == dirs.end()) {
          const std::string name = entry.path.substr(start, slash - start);
          if (::mkdirat(parent, name.c_str(), 0700) != 0) throw_os("create a staged directory");
          auto created = open_optional(parent, name, O_RDONLY | O_DIRECTORY);
          if (!created) throw_os("open a staged directory");
          it = dirs.emplace(dir_path, std::move(*created)).first;
        }
        parent = it->second.get();
        start = slash + 1;
      }
      stream_from_host(bodies, parent, entry.path.substr(start), entry);
    }
    sync_files();
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
      if (::fchmod(it->second.get(), 0555) != 0) throw_os("seal a staged directory");
      fsync_or_throw(it->second.get(), "a staged directory");
    }
  }

  // An inline body: one SKILL.md, through the same streaming writer as a file source.
  void write_inline(const std::string& content) {
    if (content.size() > caps_.file_bytes) throw MaterialRefused{"material exceeds the size cap"};
    FileDescriptor out = create_file(staged_.dir.get(), kSkillFile);
    Sha256Stream hash;
    for (std::size_t at = 0; at < content.size(); at += kChunk) {
      poll();
      const std::string_view chunk = std::string_view(content).substr(at, kChunk);
      hash.update(chunk);
      write_all(out.get(), chunk);
    }
    finish(std::move(out), TreeFile{kSkillFile, content.size(), hash.hex()}, nullptr);
  }

  // Depth-first copy of directory `from` into staged directory `to`; every staged directory is
  // sealed and fsynced once its entries exist.
  void copy_tree(int from, int to, const std::string& prefix, std::size_t depth) {
    if (depth > kMaxTreeDepth) throw MaterialRefused{"material tree is nested too deeply"};
    for (const std::string& name : list_directory(from)) {
      if (!is_tree_component(name)) {
        throw MaterialRefused{"material source holds a name the store does not accept"};
      }
      const std::string child = prefix.empty() ? name : prefix + "/" + name;
      struct stat st {};
      if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        throw MaterialRefused{"material source could not be read"};
      }
      if (S_ISDIR(st.st_mode)) {
        auto sub = open_optional(from, name, O_RDONLY | O_DIRECTORY);
        if (!sub) throw MaterialRefused{"material source could not be read"};
        if (::mkdirat(to, name.c_str(), 0700) != 0) throw_os("create a staged directory");
        auto staged_sub = open_optional(to, name, O_RDONLY | O_DIRECTORY);
        if (!staged_sub) throw_os("open a staged directory");
        copy_tree(sub->get(), staged_sub->get(), child, depth + 1);
        if (::fchmod(staged_sub->get(), 0555) != 0) throw_os("seal a staged directory");
        fsync_or_throw(staged_sub->get(), "a staged directory");
      } else if (S_ISREG(st.st_mode)) {
        auto file = open_optional(from, name, O_RDONLY | O_NONBLOCK);
        if (!file || !S_ISREG(fstat_or_throw(file->get()).st_mode)) {
          throw MaterialRefused{"material source could not be read"};
        }
        stream_file(file->get(), to, name, child);
      } else {
        throw MaterialRefused{"material source holds something other than files and directories"};
      }
    }
  }

  // Every written file synced and closed.
  void sync_files() {
    for (FileDescriptor& file : unsynced_) {
      fsync_or_throw(file.get(), "a staged file");
      if (::close(file.release()) != 0) throw_os("close a staged file");
    }
    unsynced_.clear();
  }

 private:
  static constexpr std::size_t kMaxUnsyncedFiles = 64;  // at most this many stay open
  static constexpr const char* kNotAsListed = "material file does not match its manifest entry";

  void poll() const {
    if (cancelled_ && cancelled_()) {
      throw Error("skill-installer install was cancelled by the host", ErrorCode::kCancelled);
    }
  }

  static FileDescriptor create_file(int dir, const std::string& name) {
    FileDescriptor out(
        ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
    if (!out.valid()) throw_os("create a staged file");
    return out;
  }

  // Counts `n` more bytes of a file (`bytes` so far) against the caps and its manifest entry.
  void add_bytes(std::uint64_t& bytes, std::uint64_t n, const TreeFile* entry) {
    bytes += n;
    staged_.tree_bytes += n;
    if (bytes > caps_.file_bytes || staged_.tree_bytes > caps_.tree_bytes) {
      throw MaterialRefused{"material exceeds the size cap"};
    }
    if (entry != nullptr && bytes > entry->bytes) throw MaterialRefused{kNotAsListed};
  }

  // One listed file from the host's body source into a new file `name` of `dir`.
  void stream_from_host(const BodyReader& bodies, int dir, const std::string& name,
                        const TreeFile& entry) {
    FileDescriptor out = create_file(dir, name);
    Sha256Stream hash;
    std::uint64_t bytes = 0;
    const bool found = bodies(entry.path, [&](std::string_view chunk) {
      poll();
      add_bytes(bytes, chunk.size(), &entry);
      hash.update(chunk);
      write_all(out.get(), chunk);
    });
    if (!found) throw MaterialRefused{"material source lacks a file its manifest lists"};
    finish(std::move(out), TreeFile{entry.path, bytes, hash.hex()}, &entry);
  }

  // A written file: its writeback started (no durability is claimed from it: sync_files is the
  // sync), and it matches its manifest entry when it has one.
  void finish(FileDescriptor out, TreeFile file, const TreeFile* entry) {
    ::sync_file_range(out.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
    unsynced_.push_back(std::move(out));
    if (unsynced_.size() >= kMaxUnsyncedFiles) sync_files();
    if (entry != nullptr && file != *entry) throw MaterialRefused{kNotAsListed};
    staged_.files.push_back(std::move(file));
  }

  Staged& staged_;
  const Caps& caps_;
  const CancelCheck& cancelled_;
  const std::vector<TreeFile>* listed_;
  std::map<std::string, const TreeFile*, std::less<>> entries_;  // listed_, by path
  std::vector<FileDescriptor> unsynced_;
};

SkillStore::Staged SkillStore::stage(const Json& request, Form form,
                                     const std::vector<TreeFile>* listed,
                                     const BodyReader* bodies) {
  const std::string& hex = pc::require_string(request, "content_sha256", "install request");
  Staged staged;
  staged.tmp = tmp_fd_.get();
  for (;;) {
    const std::string name = hex + unique_suffix() + kStageSuffix;
    if (::mkdirat(tmp_fd_.get(), name.c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;
      throw_os("create a staging directory");
    }
    auto dir = open_optional(tmp_fd_.get(), name, O_RDONLY | O_DIRECTORY);
    if (!dir) continue;  // swept between mkdir and open
    if (::flock(dir->get(), LOCK_EX) != 0) throw_os("lock a staging directory");
    if (fstat_or_throw(dir->get()).st_nlink == 0) continue;  // swept before we held the lock
    staged.name = name;
    staged.dir = std::move(*dir);
    break;
  }
  // tmp/ itself is not synced: a staging entry is scratch (one lost in a crash was never
  // published; one that survives unlocked is swept), and the published object is made durable
  // by the syncs of its own entries and of objects/ below.
  StageWriter writer(staged, caps_, cancelled_, listed);
  const auto source = request.find("source");
  if (bodies != nullptr) {
    writer.write_from_host(*bodies);
  } else if (source == request.end()) {  // inline body: one SKILL.md
    const auto text = pc::optional_string(request, "content", "install request");
    writer.write_inline(
        text ? *text
             : pc::from_base64(pc::require_string(request, "content_base64", "install request"),
                               "install request content"));
  } else if (form == Form::kFile) {
    const std::string& path = pc::require_string(*source, "file", "install request source");
    FileDescriptor in(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!in.valid()) throw MaterialRefused{"material source could not be opened"};
    if (!S_ISREG(fstat_or_throw(in.get()).st_mode)) {
      throw MaterialRefused{"material source is not a regular file"};
    }
    writer.stream_file(in.get(), staged.dir.get(), kSkillFile, kSkillFile);
  } else {
    const std::string& path = pc::require_string(*source, "directory", "install request source");
    FileDescriptor in(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!in.valid()) throw MaterialRefused{"material source could not be opened"};
    writer.copy_tree(in.get(), staged.dir.get(), "", 1);
    if (listed != nullptr && staged.files.size() != listed->size()) {
      throw MaterialRefused{"material source lacks a file its manifest lists"};
    }
  }
  writer.sync_files();
  // The staging directory itself is synced once, after publication (install()): its entries
  // and its seal in one fsync.
  return staged;
}

Json SkillStore::install(std::string_view request_json) {
  return install_request(request_json, nullptr);
}

Json SkillStore::install_from_source(std::string_view request_json, const BodyReader& bodies) {
  if (!bodies) throw InvalidArgument("install_from_source needs a body source");
  return install_request(request_json, &bodies);
}

struct SkillStore::Request {
  std::string capability_id;
  std::string expected;  // content_sha256: the file's digest, or the tree root's
  Form form = Form::kFile;
  std::optional<std::uint64_t> expected_bytes;
  std::optional<std::string> expected_material;
  std::optional<std::vector<TreeFile>> listed;  // tree form: the manifest every file must match
  std::string listed_root;                      // ... and the root it implies

  // Why material of `sha` and `bytes` is not the authorised material, or nullopt when it is.
  std::optional<std::string> mismatch(const std::string& sha, std::uint64_t bytes,
                                      const std::string& material) const {
    if (sha != expected) return "content digest mismatch";
    if (expected_bytes && *expected_bytes != bytes) return "content size mismatch";
    if (expected_material && *expected_material != material) {
      return "material identity digest mismatch";
    }
    return std::nullopt;
  }
};

SkillStore::Request SkillStore::read_request(const Json& request, bool from_host) const {
  constexpr std::string_view kWhat = "install request";
  Request out;
  out.capability_id = pc::require_string(request, "capability_id", kWhat);
  skill_name(out.capability_id);
  out.expected = require_digest(request, kWhat);
  const bool has_text = request.contains("content");
  const bool has_base64 = request.contains("content_base64");
  const auto source = request.find("source");
  const bool has_source = source != request.end();
  if (from_host) {
    if (has_text || has_base64 || has_source) {
      throw InvalidArgument(
          "install_from_source request takes its bodies from the host, not content or source");
    }
    out.form = Form::kTree;
  } else if (int(has_text) + int(has_base64) + int(has_source) != 1) {
    throw InvalidArgument(
        "install request needs exactly one of content, content_base64, source");
  }
  if (has_source) {
    if (!source->is_object() || source->size() != 1 ||
        !(source->contains("file") || source->contains("directory"))) {
      throw InvalidArgument("install request source needs exactly one of file, directory");
    }
    out.form = source->contains("directory") ? Form::kTree : Form::kFile;
  }
  if (const auto it = request.find("content_bytes"); it != request.end()) {
    if (!it->is_number_unsigned()) {
      throw InvalidArgument("install request content_bytes must be an unsigned integer");
    }
    out.expected_bytes = it->get<std::uint64_t>();
  }
  out.expected_material = pc::optional_string(request, "material_identity_digest", kWhat);
  if (out.expected_material && !pc::is_sha256_hex(*out.expected_material)) {
    throw InvalidArgument("install request material_identity_digest is not a sha-256 digest");
  }
  if (out.form == Form::kTree) {
    const std::string& manifest = pc::require_string(request, "manifest", kWhat);
    out.listed = parse_manifest(manifest);
    out.listed_root = sdk::tree_root_text(*out.listed, pc::sha256_hex(manifest));
  } else if (request.contains("manifest")) {
    throw InvalidArgument("install request manifest goes with a directory source only");
  }
  return out;
}

std::optional<std::string> SkillStore::refuse_manifest(const Request& request) const {
  // The manifest must name the authorised root before any body is read, and fit the caps.
  const std::string sha = pc::sha256_hex(request.listed_root);
  if (sha != request.expected) return "manifest does not match the authorised tree root";
  if (auto reason = request.mismatch(
          sha, request.listed_root.size(),
          pc::material_identity_digest(request.capability_id, sha, request.listed_root.size()))) {
    return reason;
  }
  std::uint64_t total = 0;
  for (const TreeFile& file : *request.listed) {
    total += file.bytes;
    if (file.bytes > caps_.file_bytes || total > caps_.tree_bytes) {
      return "material exceeds the size cap";
    }
  }
  if (request.listed->size() > caps_.files) return "material has too many files";
  return std::nullopt;
}

bool SkillStore::publish(Staged& staged, const std::string& expected, Form form) {
  for (int attempt = 0;; ++attempt) {
    if (::renameat(tmp_fd_.get(), staged.name.c_str(), objects_fd_.get(), expected.c_str()) == 0) {
      staged.published = true;
      // One sync of the object (its entries, created above, and its seal), then of objects/,
      // before the applied reply. A crash before both leaves at worst a name in objects/ whose
      // tree does not verify: every reader (inspect_object) hashes the tree, so it is never
      // taken as installed, and the next install moves it aside.
      if (::fchmod(staged.dir.get(), 0555) != 0) throw_os("seal an installed object");
      fsync_or_throw(staged.dir.get(), "an installed object");
      fsync_or_throw(objects_fd_.get(), "the object directory");
      return true;
    }
    if ((errno != EEXIST && errno != ENOTEMPTY && errno != ENOTDIR && errno != EISDIR) ||
        attempt > 0) {
      throw_os("publish an installed object");
    }
    const Object now = inspect_object(expected);
    if (now.state == Object::State::kVerified && now.form == form) return false;
    const std::string aside = expected + unique_suffix() + kBadSuffix;
    ::fchmodat(objects_fd_.get(), expected.c_str(), 0700, 0);
    if (::renameat(objects_fd_.get(), expected.c_str(), tmp_fd_.get(), aside.c_str()) != 0) {
      throw_os("move a corrupt object aside");
    }
    fsync_or_throw(objects_fd_.get(), "the object directory");
    try {
      remove_tree_at(tmp_fd_.get(), aside);
    } catch (const Error&) {  // another instance's sweep may be removing it too; sweeps finish it
    }
  }
}

Json SkillStore::install_request(std::string_view request_json, const BodyReader* bodies) {
  const Json request = pc::parse_object(request_json, "install request");
  const Request wanted = read_request(request, bodies != nullptr);
  Json reply = {{"capability_id", wanted.capability_id},
                {"form", wanted.form == Form::kTree ? "tree" : "file"}};
  // Applied when the observed material matches every expectation; failed with `reason` else.
  const auto settle = [&](const std::string& observed_sha, std::uint64_t observed_bytes,
                          bool rewritten) -> std::optional<std::string> {
    const std::string material =
        pc::material_identity_digest(wanted.capability_id, observed_sha, observed_bytes);
    reply["observed_material_identity_digest"] = material;
    if (auto reason = wanted.mismatch(observed_sha, observed_bytes, material)) return reason;
    reply["outcome"] = "applied";
    reply["rewritten"] = rewritten;
    reply["verification_digest"] =
        install_verification_digest(wanted.capability_id, material, wanted.expected);
    return std::nullopt;
  };
  const auto refuse = [&](const std::string& reason) {
    reply["outcome"] = "failed";
    reply["reason"] = reason;
    return reply;
  };
  if (wanted.listed) {
    if (auto reason = refuse_manifest(wanted)) return refuse(*reason);
  }

  require_same_root();
  const Object existing = inspect_object(wanted.expected);
  if (existing.state == Object::State::kVerified && existing.form == wanted.form) {
    if (auto reason = settle(wanted.expected, existing.material_bytes, false)) {
      return refuse(*reason);
    }
    return reply;
  }
  std::optional<Staged> staged;
  try {
    staged.emplace(stage(request, wanted.form, wanted.listed ? &*wanted.listed : nullptr, bodies));
  } catch (const MaterialRefused& refused) {
    return refuse(refused.reason);
  }
  std::string observed_sha;
  std::uint64_t observed_bytes = 0;
  if (wanted.form == Form::kFile) {
    observed_sha = staged->files.at(0).sha256;
    observed_bytes = staged->files.at(0).bytes;
  } else {
    const auto root = tree_root_of(staged->files);
    if (!root) return refuse("material tree has no top-level SKILL.md");
    observed_sha = pc::sha256_hex(*root);
    observed_bytes = root->size();
  }
  if (auto reason = settle(observed_sha, observed_bytes, true)) return refuse(*reason);
  if (!publish(*staged, wanted.expected, wanted.form)) reply["rewritten"] = false;
  return reply;
}

Json SkillStore::activate(std::string_view request_json) {
  constexpr std::string_view kWhat = "activate request";
  const Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = skill_name(capability_id);
  const std::string& hex = require_digest(request, kWhat);

  Json reply = {{"capability_id", capability_id}};
  const auto refuse = [&](const char* reason) {
    reply["outcome"] = "failed";
    reply["reason"] = reason;
    return reply;
  };
  require_same_root();
  const Object object = inspect_object(hex);
  if (object.state == Object::State::kAbsent) return refuse("material is not installed");
  if (object.state == Object::State::kCorrupt) return refuse("installed material does not verify");
  if (!slot_target(name)) return refuse("activation slot holds something ctx did not create");

  const std::string staging = kLinkPrefix + name + unique_suffix() + kLinkSuffix;
  if (::symlinkat(object_link(hex).c_str(), activation_fd_.get(), staging.c_str()) != 0) {
    throw_os("stage an activation link");
  }
  if (::renameat(activation_fd_.get(), staging.c_str(), activation_fd_.get(), name.c_str()) != 0) {
    ::unlinkat(activation_fd_.get(), staging.c_str(), 0);
    throw_os("publish an activation link");
  }
  fsync_or_throw(activation_fd_.get(), "the activation root");
  const std::string material =
      pc::material_identity_digest(capability_id, hex, object.material_bytes);
  reply["outcome"] = "applied";
  reply["active_sha256"] = hex;
  reply["observed_material_identity_digest"] = material;
  reply["verification_digest"] = activation_verification_digest(capability_id, name, material, hex);
  return reply;
}

Json SkillStore::deactivate(std::string_view request_json) {
  constexpr std::string_view kWhat = "deactivate request";
  const Json request = pc::parse_object(request_json, kWhat);
  const std::string& capability_id = pc::require_string(request, "capability_id", kWhat);
  const std::string name = skill_name(capability_id);

  require_same_root();
  const auto target = slot_target(name);
  if (!target) {
    return Json{{"capability_id", capability_id},
                {"outcome", "failed"},
                {"reason", "activation slot holds something ctx did not create"}};
  }
  bool was_active = false;
  if (!target->empty()) {
    if (::unlinkat(activation_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      throw_os("remove an activation link");
    }
    was_active = true;
    fsync_or_throw(activation_fd_.get(), "the activation root");
  }
  return Json{{"capability_id", capability_id}, {"outcome", "applied"}, {"was_active", was_active}};
}

Json SkillStore::reconcile(std::string_view request_json) const {
  constexpr std::string_view kWhat = "reconcile request";
  const Json request = pc::parse_object(request_json, kWhat);
  const auto list = request.find("capabilities");
  if (list == request.end() || !list->is_array()) {
    throw InvalidArgument("reconcile request needs an array \"capabilities\"");
  }
  require_same_root();
  Json states = Json::array();
  for (const Json& item : *list) {
    if (!item.is_object()) throw InvalidArgument("reconcile request capabilities must be objects");
    const std::string& capability_id = pc::require_string(item, "capability_id", kWhat);
    const std::string name = skill_name(capability_id);
    const std::string& hex = require_digest(item, kWhat);

    Json state = {{"capability_id", capability_id},
                  {"content_sha256", hex},
                  {"installed", false},
                  {"active", false},
                  {"active_sha256", nullptr},
                  {"active_material_identity_digest", nullptr},
                  {"verification_digest", nullptr}};
    std::vector<std::string> reasons;
    const Object object = inspect_object(hex);
    if (object.state == Object::State::kVerified) {
      state["installed"] = true;
      state["install_state"] = "applied";
    } else if (object.state == Object::State::kCorrupt) {
      state["install_state"] = "indeterminate";
      reasons.emplace_back("installed material does not verify");
    } else if (live_staging_for(hex)) {
      state["install_state"] = "indeterminate";
      reasons.emplace_back("an install of the material is in progress");
    } else {
      state["install_state"] = "absent";
    }

    const auto target = slot_target(name);
    if (!target) {
      state["activation_state"] = "indeterminate";
      reasons.emplace_back("activation slot holds something ctx did not create");
    } else if (target->empty()) {
      state["activation_state"] = "absent";
    } else {
      state["active_sha256"] = *target;
      const Object active = *target == hex ? object : inspect_object(*target);
      if (active.state != Object::State::kVerified) {
        state["activation_state"] = "indeterminate";
        reasons.emplace_back("active material does not verify");
      } else {
        const std::string material =
            pc::material_identity_digest(capability_id, *target, active.material_bytes);
        state["active_material_identity_digest"] = material;
        if (*target == hex) {
          state["active"] = true;
          state["activation_state"] = "applied";
          state["verification_digest"] =
              activation_verification_digest(capability_id, name, material, hex);
        } else {
          state["activation_state"] = "absent";  // verifiably another material is active
        }
      }
    }
    if (!reasons.empty()) state["reason"] = reasons.front();
    states.push_back(std::move(state));
  }
  return Json{{"capabilities", states}};
}

}  // namespace ctx::skill_installer
