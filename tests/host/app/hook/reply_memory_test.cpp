// ReplyMemory (reply_memory.hpp) over a real state dir: a reply is given again only after the
// second undisturbed run of its key, only while the state watch vouches for it, and a reply
// naming a consent challenge only until 5 s before the challenge expires.
#include "host/app/hook/reply_memory.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace ctx::runtime::hooks {
namespace {

namespace fs = std::filesystem;

class SetClock final : public core::Clock {
 public:
  explicit SetClock(const std::string& at) : now_(core::parse_rfc3339(at)) {}
  core::Timestamp now() const override { return now_; }
  void set(const std::string& at) { now_ = core::parse_rfc3339(at); }

 private:
  core::Timestamp now_;
};

class ReplyMemoryTest : public ::testing::Test {
 protected:
  // One full run of `key` that read `sources_` and answered `reply`.
  void run(const std::string& key, const std::string& reply,
           const std::vector<std::string>& expiries = {}) {
    const ReplyMemory::Before before = memory_.before_run(key);
    memory_.remember(key, before, sources_, HookResponse{reply}, expiries);
  }

  ctx::testing::TempDir dir_;
  // A file the runs read that does not exist yet (a missing file is recorded as missing).
  std::vector<fs::path> sources_{dir_.path() / "registry-file.json"};
  ReplyMemory memory_{dir_.path()};
  SetClock clock_{"2026-08-02T12:00:00Z"};
};

TEST_F(ReplyMemoryTest, AReplyIsGivenAgainOnlyAfterTheSecondUndisturbedRun) {
  run("k", "reply one");
  // The first run only named the files to watch.
  EXPECT_EQ(memory_.recall("k", clock_, true), nullptr);
  run("k", "reply one");
  const auto known = memory_.recall("k", clock_, true);
  ASSERT_NE(known, nullptr);
  EXPECT_EQ(known->reply, std::optional<std::string>("reply one"));
  EXPECT_EQ(known->result_text, hook_response_to_json(HookResponse{"reply one"}).dump());
  ASSERT_NE(memory_.recall("k", clock_, false), nullptr);
  EXPECT_EQ(memory_.hits(), 2u);
  EXPECT_EQ(memory_.recall("other key", clock_, true), nullptr);
  EXPECT_EQ(memory_.hits(), 2u);
}

TEST_F(ReplyMemoryTest, AChangeToWhatTheRunReadForgetsTheReply) {
  run("k", "reply");
  run("k", "reply");
  ASSERT_NE(memory_.recall("k", clock_, true), nullptr);
  std::ofstream(sources_[0]) << "{}";
  EXPECT_EQ(memory_.recall("k", clock_, true), nullptr);
}

TEST_F(ReplyMemoryTest, AChallengesReplyHoldsUntilFiveSecondsBeforeItsExpiry) {
  // Two challenges: the earlier expiry counts.
  run("c", "approve?", {"2026-08-02T12:01:00Z", "2026-08-02T12:00:30Z"});
  run("c", "approve?", {"2026-08-02T12:01:00Z", "2026-08-02T12:00:30Z"});
  clock_.set("2026-08-02T12:00:24Z");
  EXPECT_NE(memory_.recall("c", clock_, true), nullptr);
  clock_.set("2026-08-02T12:00:25Z");
  EXPECT_EQ(memory_.recall("c", clock_, true), nullptr);
}

TEST(ReplyMemoryKey, IsAnHmacOfTheAdapterAndPayloadUnderTheInstallationKey) {
  const std::string key(32, 'k');
  const std::string a = ReplyMemory::key_of(key, HookRequest{"claude-code", "{\"p\":1}"});
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, ReplyMemory::key_of(key, HookRequest{"claude-code", "{\"p\":1}"}));
  EXPECT_NE(a, ReplyMemory::key_of(key, HookRequest{"codex", "{\"p\":1}"}));
  EXPECT_NE(a, ReplyMemory::key_of(key, HookRequest{"claude-code", "{\"p\":2}"}));
  EXPECT_NE(a, ReplyMemory::key_of(std::string(32, 'o'), HookRequest{"claude-code", "{\"p\":1}"}));
  // The adapter and payload are separated: moving a byte across the boundary changes the key.
  EXPECT_NE(ReplyMemory::key_of(key, HookRequest{"ab", "c"}),
            ReplyMemory::key_of(key, HookRequest{"a", "bc"}));
}

}  // namespace
}  // namespace ctx::runtime::hooks
