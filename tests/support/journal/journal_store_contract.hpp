// The JournalStore contract as a typed GoogleTest suite. Instantiate it with a factory type
// providing `static std::unique_ptr<engine::JournalStore> make(const std::filesystem::path&
// dir)`; every implementation (SqliteJournalStore, MemJournalStore) must pass it.
#ifndef CTX_TESTS_SUPPORT_JOURNAL_JOURNAL_STORE_CONTRACT_HPP_
#define CTX_TESTS_SUPPORT_JOURNAL_JOURNAL_STORE_CONTRACT_HPP_

#include <gtest/gtest.h>

#include <memory>

#include "host/engine/journal_store.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/journal/journal_fixtures.hpp"

namespace ctx::testing::journal {

template <typename Factory>
class JournalStoreContractTest : public ::testing::Test {
 protected:
  engine::JournalStore& store() {
    if (!store_) store_ = Factory::make(dir_.path());
    return *store_;
  }
  TempDir dir_;
  std::unique_ptr<engine::JournalStore> store_;
};

TYPED_TEST_SUITE_P(JournalStoreContractTest);

TYPED_TEST_P(JournalStoreContractTest, EmptyStreamHasRevisionZero) {
  EXPECT_EQ(this->store().head(stream()), engine::JournalHead{});
  EXPECT_TRUE(this->store().read(stream()).empty());
  EXPECT_EQ(this->store().find(stream(), "event-1"), std::nullopt);
}

TYPED_TEST_P(JournalStoreContractTest, FirstAppendIsRevisionOneWithNullPrevious) {
  engine::JournalCommit commit = this->store().append(make_append(stream(), 0, "event-1"));
  EXPECT_FALSE(commit.replayed);
  EXPECT_EQ(commit.record.revision, 1);
  EXPECT_EQ(commit.record.previous_record_digest, std::nullopt);
  EXPECT_EQ(commit.record.record_digest, engine::journal_record_digest(commit.record));
  EXPECT_EQ(commit.record.replay_digest, core::sha256_hex(commit.record.replay_json));
  engine::JournalHead head = this->store().head(stream());
  EXPECT_EQ(head.revision, 1);
  EXPECT_EQ(head.record_digest, commit.record.record_digest);
  EXPECT_EQ(head.state_digest, commit.record.result_state_digest);
}

TYPED_TEST_P(JournalStoreContractTest, RecordsChainInRevisionOrder) {
  auto r1 = this->store().append(make_append(stream(), 0, "event-1")).record;
  auto r2 = this->store().append(make_append(stream(), 1, "event-2")).record;
  auto r3 = this->store().append(make_append(stream(), 2, "event-3")).record;
  EXPECT_EQ(r2.previous_record_digest, r1.record_digest);
  EXPECT_EQ(r3.previous_record_digest, r2.record_digest);
  std::vector<engine::JournalRecord> all = this->store().read(stream());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], r1);
  EXPECT_EQ(all[2], r3);
  std::vector<engine::JournalRecord> tail = this->store().read(stream(), 1);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0], r2);
  EXPECT_TRUE(this->store().read(stream(), 3).empty());
  EXPECT_EQ(this->store().find(stream(), "event-2"), r2);
}

TYPED_TEST_P(JournalStoreContractTest, StaleExpectedRevisionConflicts) {
  this->store().append(make_append(stream(), 0, "event-1"));
  this->store().append(make_append(stream(), 1, "event-2"));
  try {
    this->store().append(make_append(stream(), 1, "event-3"));
    FAIL() << "expected RevisionConflict";
  } catch (const engine::RevisionConflict& conflict) {
    EXPECT_EQ(conflict.expected(), 1);
    EXPECT_EQ(conflict.actual(), 2);
    EXPECT_STREQ(conflict.what(), "expected revision 1, found 2");
    EXPECT_EQ(conflict.code(), ErrorCode::kAborted);
  }
  CTX_EXPECT_THROW(this->store().append(make_append(stream(), 5, "event-4")),
                   engine::RevisionConflict, "expected revision 5, found 2");
  EXPECT_EQ(this->store().head(stream()).revision, 2);
}

TYPED_TEST_P(JournalStoreContractTest, IdenticalRetryReplaysTheOriginalRecord) {
  engine::JournalAppend first = make_append(stream(), 0, "event-1");
  engine::JournalRecord original = this->store().append(first).record;
  engine::JournalCommit retry = this->store().append(first);
  EXPECT_TRUE(retry.replayed);
  EXPECT_EQ(retry.record, original);
  // Still replays after the head moved on (the retry's expected revision is stale).
  this->store().append(make_append(stream(), 1, "event-2"));
  engine::JournalCommit late = this->store().append(first);
  EXPECT_TRUE(late.replayed);
  EXPECT_EQ(late.record, original);
  EXPECT_EQ(this->store().read(stream()).size(), 2u);
}

TYPED_TEST_P(JournalStoreContractTest, SameEventIdWithOtherContentCollides) {
  this->store().append(make_append(stream(), 0, "event-1"));
  AppendSpec changed;
  changed.expected = 1;
  changed.event_id = "event-1";
  changed.payload = Json{{"changed", true}};
  try {
    this->store().append(make_append(changed));
    FAIL() << "expected EventIdCollision";
  } catch (const engine::EventIdCollision& collision) {
    EXPECT_EQ(collision.event_id(), "event-1");
    EXPECT_EQ(collision.code(), ErrorCode::kAlreadyExists);
    EXPECT_NE(collision.stored_digest(), collision.submitted_digest());
    EXPECT_NE(std::string(collision.what()).find("already bound to different content"),
              std::string::npos);
  }
  EXPECT_EQ(this->store().head(stream()).revision, 1);
}

TYPED_TEST_P(JournalStoreContractTest, EventIdsAreGlobalAcrossStreams) {
  this->store().append(make_append(stream("a"), 0, "event-1"));
  CTX_EXPECT_THROW(this->store().append(make_append(stream("b"), 0, "event-1")),
                   engine::EventIdCollision, "already bound to different content");
  CTX_EXPECT_THROW(this->store().find(stream("b"), "event-1"), engine::EventIdCollision,
                   "event-1");
  EXPECT_EQ(this->store().head(stream("b")).revision, 0);
}

TYPED_TEST_P(JournalStoreContractTest, StreamsHaveIndependentRevisions) {
  this->store().append(make_append(stream("a"), 0, "a-1"));
  this->store().append(make_append(stream("a"), 1, "a-2"));
  auto b1 = this->store().append(make_append(stream("b"), 0, "b-1")).record;
  EXPECT_EQ(b1.revision, 1);
  EXPECT_EQ(b1.previous_record_digest, std::nullopt);
  EXPECT_EQ(this->store().head(stream("a")).revision, 2);
  EXPECT_EQ(this->store().read(stream("b")).size(), 1u);
}

TYPED_TEST_P(JournalStoreContractTest, MalformedAppendsAreRejectedWithoutWriting) {
  this->store().append(make_append(stream(), 0, "event-1"));
  auto rejected = [&](engine::JournalAppend request, const char* keyword) {
    CTX_EXPECT_THROW(this->store().append(request), InvalidArgument, keyword);
  };
  engine::JournalAppend good = make_append(stream(), 1, "event-2");
  // Non-canonical text never becomes a CanonicalText, so it cannot reach append at all.
  CTX_EXPECT_THROW(engine::CanonicalText::verify("{ \"a\": 1}", "replay_json"), InvalidArgument,
                   "replay_json must be canonical json");
  CTX_EXPECT_THROW(engine::TransitionText::verify("{\"b\":1,\"a\":2}"), InvalidArgument,
                   "transition_json must be canonical json");
  CTX_EXPECT_THROW(engine::TransitionText::verify("{\"event_id\":\"e\"}"), InvalidArgument,
                   "transition must name the record event id and revision");
  {
    auto r = good;
    r.result_state = engine::CanonicalText{};
    rejected(r, "result_state must be set");
  }
  {
    auto r = good;
    r.event_content_digest = "ABC";
    rejected(r, "event_content_digest");
  }
  {
    auto r = good;
    r.event_id = " event-2";
    rejected(r, "event_id must be a non-empty trimmed string");
  }
  {
    auto r = good;
    r.expected_revision = -1;
    rejected(r, "expected_revision");
  }
  {
    auto r = make_append(stream(), 1, "event-2");
    r.event_id = "event-3";  // the transition still names event-2
    rejected(r, "transition must name the record event id and revision");
  }
  {
    auto r = make_append(stream("other"), 1, "event-2");
    r.stream = stream();
    rejected(r, "transition scope must belong to the record stream");
  }
  EXPECT_EQ(this->store().head(stream()).revision, 1);
  EXPECT_EQ(this->store().read(stream()).size(), 1u);
  CTX_EXPECT_THROW(this->store().read(stream(), -1), InvalidArgument, "after");
}

REGISTER_TYPED_TEST_SUITE_P(JournalStoreContractTest, EmptyStreamHasRevisionZero,
                            FirstAppendIsRevisionOneWithNullPrevious,
                            RecordsChainInRevisionOrder, StaleExpectedRevisionConflicts,
                            IdenticalRetryReplaysTheOriginalRecord,
                            SameEventIdWithOtherContentCollides,
                            EventIdsAreGlobalAcrossStreams, StreamsHaveIndependentRevisions,
                            MalformedAppendsAreRejectedWithoutWriting);

}  // namespace ctx::testing::journal

#endif  // CTX_TESTS_SUPPORT_JOURNAL_JOURNAL_STORE_CONTRACT_HPP_
