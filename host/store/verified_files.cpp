#include "host/store/verified_files.hpp"

#include <time.h>

#include <map>
#include <mutex>
#include <tuple>
#include <utility>

namespace ctx::store {
namespace {

constexpr std::size_t kMaxRemembered = 32;
constexpr time_t kSettledSeconds = 1;

struct Remembered {
  off_t size;
  mode_t mode;
  nlink_t links;
  struct timespec mtime;
  struct timespec ctime;
  std::string sha256;
  unsigned long long use;  // for eviction: the least recently remembered goes first
};

bool same_time(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

struct Memory {
  std::mutex mutex;
  std::map<std::pair<dev_t, ino_t>, Remembered> files;  // GUARDED_BY(mutex)
  unsigned long long clock = 0;                         // GUARDED_BY(mutex)
};

Memory& memory() {
  static Memory instance;
  return instance;
}

}  // namespace

std::optional<std::string> known_sha256(const struct stat& status) {
  if (!S_ISREG(status.st_mode)) return std::nullopt;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const auto it = m.files.find({status.st_dev, status.st_ino});
  if (it == m.files.end()) return std::nullopt;
  const Remembered& r = it->second;
  if (r.size != status.st_size || r.mode != status.st_mode || r.links != status.st_nlink ||
      !same_time(r.mtime, status.st_mtim) || !same_time(r.ctime, status.st_ctim)) {
    return std::nullopt;
  }
  return r.sha256;
}

void remember_sha256(const struct stat& status, const std::string& sha256,
                     const struct timespec& read_at) {
  if (!S_ISREG(status.st_mode)) return;
  // A change in the same clock tick as the last one would leave both time stamps as they are:
  // only a file whose last change is well before the read is remembered.
  const auto settled = [&](const struct timespec& t) {
    return t.tv_sec + kSettledSeconds < read_at.tv_sec;
  };
  if (!settled(status.st_ctim) || !settled(status.st_mtim)) return;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.files.size() >= kMaxRemembered && !m.files.count({status.st_dev, status.st_ino})) {
    auto oldest = m.files.begin();
    for (auto it = m.files.begin(); it != m.files.end(); ++it) {
      if (it->second.use < oldest->second.use) oldest = it;
    }
    m.files.erase(oldest);
  }
  m.files[{status.st_dev, status.st_ino}] =
      Remembered{status.st_size, status.st_mode, status.st_nlink, status.st_mtim,
                 status.st_ctim, sha256,         ++m.clock};
}

struct timespec realtime_now() {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return now;
}

}  // namespace ctx::store
