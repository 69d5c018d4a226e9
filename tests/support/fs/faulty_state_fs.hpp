// StateFsWrapper forwards every core::StateFs operation to another StateFs (leveldb's
// EnvWrapper); FaultyStateFs, one, can be armed to make the Nth step of a kind (optionally only
// those whose path ends with a given name) fail with an errno — thrown as the core::StateFsError
// the real file system would throw, with what it leaves: a failed create_file leaves no file — or
// "crash" there: StateFsCrash is thrown before the step runs (what a process killed at that step
// leaves on disk). Each arming fires once. It counts every step it sees. Arm from the test's
// thread; thread-safe otherwise.
#ifndef CTX_TESTS_SUPPORT_FS_FAULTY_STATE_FS_HPP_
#define CTX_TESTS_SUPPORT_FS_FAULTY_STATE_FS_HPP_

#include <cerrno>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/state_fs.hpp"

namespace ctx::testing {

// Thrown by FaultyStateFs::crash_at: the process "died" before the step. Not a ctx::Error (nor a
// std::exception), so no handler of the code under test that reports errors swallows it.
struct StateFsCrash {
  core::StateFsStep step;
  std::filesystem::path path;
};

class StateFsWrapper : public core::StateFs {
 public:
  // `target` must outlive this wrapper.
  explicit StateFsWrapper(core::StateFs& target) : target_(target) {}

  void create_file(const std::filesystem::path& file, std::string_view bytes,
                   const core::NewFile& how) override {
    target_.create_file(file, bytes, how);
  }
  void rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    target_.rename(from, to);
  }
  void link(const std::filesystem::path& from, const std::filesystem::path& to) override {
    target_.link(from, to);
  }
  void remove(const std::filesystem::path& file) noexcept override { target_.remove(file); }
  void sync_dir(const std::filesystem::path& dir, support::Follow follow) override {
    target_.sync_dir(dir, follow);
  }
  void sync_file_system(const std::filesystem::path& dir) override {
    target_.sync_file_system(dir);
  }

 protected:
  core::StateFs& target() noexcept { return target_; }

 private:
  core::StateFs& target_;
};

class FaultyStateFs final : public StateFsWrapper {
 public:
  using StateFsWrapper::StateFsWrapper;

  // The `nth` (1 = the next) `step` whose path (a rename's or link's destination) has the file
  // name `name` (empty: any path) fails with `error`.
  void fail(core::StateFsStep step, int error, std::string name = {}, int nth = 1) {
    std::lock_guard lock(mutex_);
    armed_.push_back(Arming{step, std::move(name), nth, error});
  }
  // Likewise, but StateFsCrash is thrown before that step runs.
  void crash_at(core::StateFsStep step, std::string name = {}, int nth = 1) {
    std::lock_guard lock(mutex_);
    armed_.push_back(Arming{step, std::move(name), nth, std::nullopt});
  }
  // How many `step`s this wrapper has seen (faulted ones included).
  int count(core::StateFsStep step) const {
    std::lock_guard lock(mutex_);
    const auto it = counts_.find(step);
    return it == counts_.end() ? 0 : it->second;
  }
  // Armings that have not fired yet.
  std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return armed_.size();
  }

  void create_file(const std::filesystem::path& file, std::string_view bytes,
                   const core::NewFile& how) override {
    inject(core::StateFsStep::kCreate, file);
    // A write or sync fault: the real file system removes what it created and reports it.
    const auto late = [&](core::StateFsStep step) { return take(step, file); };
    const auto write_fault = late(core::StateFsStep::kWrite);
    const auto sync_fault = how.sync ? late(core::StateFsStep::kSync) : Fault{};
    StateFsWrapper::create_file(file, bytes, how);
    for (const Fault& fault : {write_fault, sync_fault}) {
      if (!fault.fires) continue;
      target().remove(file);
      if (!fault.error) throw StateFsCrash{fault.step, file};
      throw core::StateFsError(fault.step, file, *fault.error);
    }
  }
  void rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    inject(core::StateFsStep::kRename, to);
    StateFsWrapper::rename(from, to);
  }
  void link(const std::filesystem::path& from, const std::filesystem::path& to) override {
    inject(core::StateFsStep::kLink, to);
    StateFsWrapper::link(from, to);
  }
  void sync_dir(const std::filesystem::path& dir, support::Follow follow) override {
    inject(core::StateFsStep::kSyncDir, dir);
    StateFsWrapper::sync_dir(dir, follow);
  }
  void sync_file_system(const std::filesystem::path& dir) override {
    inject(core::StateFsStep::kSyncFs, dir);
    StateFsWrapper::sync_file_system(dir);
  }

 private:
  struct Arming {
    core::StateFsStep step;
    std::string name;
    int nth;
    std::optional<int> error;  // nullopt: crash
  };
  struct Fault {
    bool fires = false;
    core::StateFsStep step = core::StateFsStep::kCreate;
    std::optional<int> error;
  };

  // Counts `step` on `path` and claims the arming it fires, if any.
  Fault take(core::StateFsStep step, const std::filesystem::path& path) {
    std::lock_guard lock(mutex_);
    ++counts_[step];
    for (auto it = armed_.begin(); it != armed_.end(); ++it) {
      if (it->step != step || (!it->name.empty() && path.filename() != it->name)) continue;
      if (--it->nth > 0) continue;
      Fault fault{true, step, it->error};
      armed_.erase(it);
      return fault;
    }
    return {};
  }
  // Fails or crashes before `step` runs when an arming fires.
  void inject(core::StateFsStep step, const std::filesystem::path& path) {
    const Fault fault = take(step, path);
    if (!fault.fires) return;
    if (!fault.error) throw StateFsCrash{step, path};
    throw core::StateFsError(step, path, *fault.error);
  }

  mutable std::mutex mutex_;
  std::vector<Arming> armed_;
  std::map<core::StateFsStep, int> counts_;
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_SUPPORT_FS_FAULTY_STATE_FS_HPP_
