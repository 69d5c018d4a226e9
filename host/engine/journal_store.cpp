#include "host/engine/journal_store.hpp"

#include <utility>

#include "host/core/canonical_json.hpp"

namespace ctx::engine {

RevisionConflict::RevisionConflict(Revision expected, Revision actual)
    : EngineStoreError("expected revision " + std::to_string(expected) + ", found " +
                           std::to_string(actual),
                       ErrorCode::kAborted),
      expected_(expected),
      actual_(actual) {}

EventIdCollision::EventIdCollision(std::string event_id, std::string stored_digest,
                                   std::string submitted_digest)
    : EngineStoreError("event id '" + event_id + "' is already bound to different content",
                       ErrorCode::kAlreadyExists),
      event_id_(std::move(event_id)),
      stored_digest_(std::move(stored_digest)),
      submitted_digest_(std::move(submitted_digest)) {}

std::string journal_record_digest(const JournalRecord& record) {
  core::Json previous = nullptr;
  if (record.previous_record_digest) previous = *record.previous_record_digest;
  return core::canonical_digest(core::Json{
      {"event_content_digest", record.event_content_digest},
      {"event_id", record.event_id},
      {"previous_record_digest", previous},
      {"privacy_classification", record.privacy_classification},
      {"reducer_version", record.reducer_version},
      {"replay_digest", record.replay_digest},
      {"retention_class", record.retention_class},
      {"result_state_digest", record.result_state_digest},
      {"revision", record.revision},
      {"stream_key", record.stream.stream_key()},
      {"transition_digest", record.transition_digest},
  });
}

}  // namespace ctx::engine
