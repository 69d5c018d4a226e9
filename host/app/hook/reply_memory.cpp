#include "host/app/hook/reply_memory.hpp"

#include <exception>
#include <utility>

#include "host/core/crypto.hpp"

namespace ctx::runtime::hooks {
namespace {

// At most this many exact-retry replies are remembered (then all are forgotten).
constexpr std::size_t kMaxRemembered = 256;

// The latest time at which a remembered reply naming a challenge that expires at `expires_at`
// may still be given: kChallengeMargin before it, so the host never shows an expired one.
constexpr std::int64_t kChallengeMarginMicros = 5'000'000;
core::Timestamp remember_until(const std::string& expires_at) {
  return core::Timestamp{core::parse_rfc3339(expires_at).micros - kChallengeMarginMicros};
}

}  // namespace

ReplyMemory::ReplyMemory(std::filesystem::path state_dir) : watch_(std::move(state_dir)) {}

std::string ReplyMemory::key_of(const std::string& installation_key, const HookRequest& request) {
  std::string message = "ctx.hook-reply-cache-v1";
  message.push_back('\0');
  message += request.adapter;
  message.push_back('\0');
  message += request.payload;
  return core::hmac_sha256_hex(installation_key, message);
}

std::shared_ptr<const ReplyMemory::Entry> ReplyMemory::recall(const std::string& key,
                                                              const core::Clock& clock, bool wait) {
  std::shared_ptr<const Entry> known;
  {
    std::unique_lock lock(mutex_, std::defer_lock);
    if (wait) {
      lock.lock();
    } else if (!lock.try_lock()) {
      return nullptr;
    }
    if (const auto it = entries_.find(key); it != entries_.end() && it->second->reply) {
      known = it->second;
    }
  }
  // A reply naming a consent challenge holds only while the challenge is well before expiry.
  if (!known || (known->until && !(clock.now() < *known->until))) return nullptr;
  try {
    if (const auto now = watch_.capture(known->sources, wait); now && *now == known->fingerprint) {
      ++hits_;
      return known;
    }
  } catch (const std::exception&) {
    // Unknown: the full path decides.
  }
  return nullptr;
}

ReplyMemory::Before ReplyMemory::before_run(const std::string& key) {
  Before before;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = entries_.find(key); it != entries_.end()) {
      before.watched = it->second->sources;
    }
  }
  try {
    if (auto now = watch_.capture(before.watched)) before.fingerprint = std::move(*now);
  } catch (const std::exception&) {
    before.fingerprint.reset();
  }
  return before;
}

void ReplyMemory::remember(const std::string& key, const Before& before,
                           const std::vector<std::filesystem::path>& sources,
                           const HookResponse& response,
                           const std::vector<std::string>& challenge_expiries) {
  auto entry = std::make_shared<Entry>();
  entry->sources = sources;
  for (const std::string& expires_at : challenge_expiries) {
    const core::Timestamp until = remember_until(expires_at);
    if (!entry->until || until < *entry->until) entry->until = until;
  }
  try {
    const auto after = before.fingerprint ? watch_.capture(sources) : std::nullopt;
    if (after && sources == before.watched && *after == *before.fingerprint) {
      entry->reply = response.reply;
      entry->result_text = hook_response_to_json(response).dump();
      entry->fingerprint = *before.fingerprint;
    }
  } catch (const std::exception&) {
    entry->reply.reset();
  }
  std::lock_guard lock(mutex_);
  if (entries_.size() >= kMaxRemembered && !entries_.contains(key)) entries_.clear();
  entries_[key] = std::move(entry);
}

}  // namespace ctx::runtime::hooks
