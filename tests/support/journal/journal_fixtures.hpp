// Builders of journal values for store tests: streams, scopes, and JournalAppend requests whose
// replay / transition / state JSON is canonical and names the event, revision and stream the
// way the reducer's output does (spec §1.6, §4). Header-only; thread-safe (pure functions).
#ifndef CTX_TESTS_SUPPORT_JOURNAL_JOURNAL_FIXTURES_HPP_
#define CTX_TESTS_SUPPORT_JOURNAL_JOURNAL_FIXTURES_HPP_

#include <string>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/journal_store.hpp"
#include "host/engine/stream_id.hpp"

namespace ctx::testing::journal {

using core::Json;

inline engine::StreamId stream(const std::string& session = "session-1") {
  return engine::StreamId("tenant-1", "workspace-1", "repository-1", session);
}

inline Json scope_of(const engine::StreamId& s) {
  return Json{{"tenant_id", s.tenant_id()},       {"workspace_id", s.workspace_id()},
              {"repository_id", s.repository_id()}, {"session_id", s.session_id()},
              {"exposure_id", "exposure-1"},        {"host_context_id", "host-1"},
              {"parent_exposure_id", nullptr}};
}

inline std::string digest_of(const std::string& label) { return core::sha256_hex(label); }

// A reducer-shaped event dict: kind, payload, occurred_at, event_id.
inline Json reducer_event(const std::string& event_id, const std::string& kind,
                          const engine::StreamId& s, engine::Revision expected, Json payload,
                          const std::string& occurred_at = "2026-08-02T12:00:00Z") {
  return Json{{"event_id", event_id},   {"kind", kind},
              {"scope", scope_of(s)},   {"expected_revision", expected},
              {"payload", std::move(payload)}, {"occurred_at", occurred_at},
              {"protocol_version", 1}};
}

struct AppendSpec {
  engine::StreamId stream = journal::stream();
  engine::Revision expected = 0;
  std::string event_id = "event-1";
  std::string kind = "TurnStarting";
  Json payload = Json::object();
  std::string occurred_at = "2026-08-02T12:00:00Z";
  std::vector<Json> actions;
  std::string state_tag = "state";
  std::string padding;  // extra bytes in the state, to size rows
};

// The append request a reducer would produce for `spec`. The ingress content digest is the
// digest of the reducer event (tests do not need the ingress/sanitised distinction).
inline engine::JournalAppend make_append(const AppendSpec& spec) {
  Json event = reducer_event(spec.event_id, spec.kind, spec.stream, spec.expected, spec.payload,
                             spec.occurred_at);
  Json replay{{"reducer_event", event},
              {"reducer_version", "ctx-reducer-v3"},
              {"schema", "ctx.engine.replay-input"},
              {"schema_version", 1},
              {"source_event_content_digest", core::canonical_digest(event)}};
  Json actions = Json::array();
  for (const Json& action : spec.actions) actions.push_back(action);
  Json transition{{"actions", actions},
                  {"diagnostics", Json::array()},
                  {"event_id", spec.event_id},
                  {"from_revision", spec.expected},
                  {"protocol_version", 1},
                  {"scope", scope_of(spec.stream)},
                  {"to_revision", spec.expected + 1}};
  Json state{{"revision", spec.expected + 1}, {"tag", spec.state_tag}};
  if (!spec.padding.empty()) state["padding"] = spec.padding;
  return engine::JournalAppend{
      .stream = spec.stream,
      .expected_revision = spec.expected,
      .event_id = spec.event_id,
      .event_content_digest = core::canonical_digest(event),
      .reducer_version = "ctx-reducer-v3",
      .replay = engine::CanonicalText::encode(replay),
      .transition = engine::TransitionText{engine::CanonicalText::encode(transition), spec.event_id,
                                           spec.expected + 1, spec.stream},
      .result_state = engine::CanonicalText::encode(state),
      .privacy_classification = engine::PrivacyClass::kPrivate,
      .retention_class = engine::Retention::kLocal,
      .guard = std::nullopt,
  };
}

inline engine::JournalAppend make_append(const engine::StreamId& s, engine::Revision expected,
                                         const std::string& event_id,
                                         const std::string& tag = "state") {
  AppendSpec spec;
  spec.stream = s;
  spec.expected = expected;
  spec.event_id = event_id;
  spec.state_tag = tag;
  return make_append(spec);
}

}  // namespace ctx::testing::journal


#include "tests/support/temp_dir.hpp"

namespace ctx::testing::journal {

using ::ctx::testing::TempDir;

}  // namespace ctx::testing::journal

#include <atomic>

#include "host/core/time.hpp"

namespace ctx::testing::journal {

// A trusted clock that moves only when told. Thread-safe.
class ManualClock final : public core::Clock {
 public:
  explicit ManualClock(std::string_view start = "2026-08-02T12:00:00Z")
      : micros_(core::parse_rfc3339(start).micros) {}
  core::Timestamp now() const override {
    if (failing_.load()) throw std::runtime_error("clock unavailable");
    return core::Timestamp{micros_.load()};
  }
  void set(std::string_view at) { micros_.store(core::parse_rfc3339(at).micros); }
  void advance_seconds(std::int64_t seconds) { micros_ += seconds * 1'000'000; }
  void fail(bool failing) { failing_.store(failing); }

 private:
  std::atomic<std::int64_t> micros_;
  std::atomic<bool> failing_{false};
};

}  // namespace ctx::testing::journal

#endif  // CTX_TESTS_SUPPORT_JOURNAL_JOURNAL_FIXTURES_HPP_
