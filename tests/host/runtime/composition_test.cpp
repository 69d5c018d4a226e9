// EngineComposition::transition_at: the transition process() committed at a revision is answered
// without reading it back, every other revision (and stream) comes from the journal, and both
// agree with the journal's bytes.
#include <gtest/gtest.h>

#include "host/runtime/composition.hpp"
#include "tests/support/engine/managed_query_seed_support.hpp"

namespace ctx::runtime {
namespace {

using ::ctx::testing::candidate;
using ::ctx::testing::CompositionArgs;
using ::ctx::testing::managed_events;
using ::ctx::testing::open_composition;
using ::ctx::testing::ScopedClose;
using ::ctx::testing::TempDir;

TEST(EngineCompositionTest, TransitionAtIsWhatProcessCommittedThereAndReadsEveryOtherRevision) {
  TempDir tmp;
  CompositionArgs args;
  args.candidates = {candidate("skill:test", "manual")};
  args.suffix = "transition-at";
  auto composition = open_composition(tmp.path(), std::move(args));
  ScopedClose closing(*composition);
  const auto a = managed_events(*composition, "stream-a");
  const auto b = managed_events(*composition, "stream-b");
  const auto& scope_a = a.first.scope();
  const auto& scope_b = b.first.scope();
  ASSERT_FALSE(scope_a.stream_id() == scope_b.stream_id());

  const auto a1 = composition->process(a.first);
  const auto a2 = composition->process(a.second);
  EXPECT_EQ(composition->transition_at(scope_a, 2), a2);  // just committed
  EXPECT_EQ(composition->transition_at(scope_a, 1), a1);  // read from the journal
  const auto b1 = composition->process(b.first);
  EXPECT_EQ(composition->transition_at(scope_b, 1), b1);
  // The same revision of another stream is not what was just committed.
  EXPECT_EQ(composition->transition_at(scope_a, 1), a1);
  EXPECT_NE(a1, b1);
  EXPECT_EQ(composition->transition_at(scope_a, 3), std::nullopt);
  EXPECT_EQ(composition->transition_at(scope_a, 0), std::nullopt);
  EXPECT_EQ(composition->transition_at(scope_b, 2), std::nullopt);
  for (const auto& [scope, revision] : {std::pair{scope_a, 1}, {scope_a, 2}, {scope_b, 1}}) {
    EXPECT_EQ(composition->transition_at(scope, revision)->to_json_text(),
              composition->journal_record(scope, revision)->transition_json);
  }
}

}  // namespace
}  // namespace ctx::runtime
