#include "host/engine/journal_store.hpp"

#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"

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

namespace ctx::engine {
namespace {

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_trimmed(const std::string& value) noexcept {
  return !value.empty() && !is_space(value.front()) && !is_space(value.back());
}

void require_trimmed(const std::string& value, const char* field) {
  if (!is_trimmed(value)) {
    throw InvalidArgument(std::string(field) + " must be a non-empty trimmed string");
  }
}

void require_digest(const std::string& value, const char* field) {
  if (!core::is_sha256_hex(value)) {
    throw InvalidArgument(std::string(field) + " must be a lowercase sha-256 digest");
  }
}

bool is_classification(const std::string& v) {
  return v == "public" || v == "internal" || v == "private" || v == "confidential" ||
         v == "restricted";
}

bool is_retention(const std::string& v) {
  return v == "ephemeral" || v == "session" || v == "workspace" || v == "local" ||
         v == "persistent" || v == "aggregate";
}

// Returns an empty string when `record`'s shape is sound, else the reason.
std::string record_problem(const JournalRecord& record) {
  if (record.revision < 1) return "revision must be >= 1";
  if (!is_trimmed(record.event_id)) return "event_id must be a non-empty trimmed string";
  if (!is_trimmed(record.reducer_version)) {
    return "reducer_version must be a non-empty trimmed string";
  }
  if (!is_classification(record.privacy_classification)) {
    return "privacy_classification is not a known classification";
  }
  if (!is_retention(record.retention_class)) return "retention_class is not a known retention";
  if (!core::is_sha256_hex(record.event_content_digest)) {
    return "event_content_digest must be a lowercase sha-256 digest";
  }
  const std::pair<const std::string*, const char*> texts[] = {
      {&record.replay_json, "replay_json"},
      {&record.transition_json, "transition_json"},
      {&record.result_state_json, "result_state_json"}};
  core::Json transition;
  for (const auto& [text, name] : texts) {
    try {
      core::Json value = core::parse_canonical_json(*text);
      if (text == &record.transition_json) transition = std::move(value);
    } catch (const InvalidArgument&) {
      return std::string(name) + " must be canonical json";
    }
  }
  if (!transition.is_object()) return "transition_json must be an object";
  auto event_id = transition.find("event_id");
  auto to_revision = transition.find("to_revision");
  if (event_id == transition.end() || !event_id->is_string() ||
      event_id->get<std::string>() != record.event_id || to_revision == transition.end() ||
      !to_revision->is_number_integer() || to_revision->get<std::int64_t>() != record.revision) {
    return "transition must name the record event id and revision";
  }
  auto scope = transition.find("scope");
  bool scope_ok = scope != transition.end() && scope->is_object();
  if (scope_ok) {
    for (const char* key : {"tenant_id", "workspace_id", "repository_id", "session_id"}) {
      auto it = scope->find(key);
      if (it == scope->end() || !it->is_string()) scope_ok = false;
    }
  }
  if (!scope_ok ||
      (*scope)["tenant_id"].get<std::string>() != record.stream.tenant_id() ||
      (*scope)["workspace_id"].get<std::string>() != record.stream.workspace_id() ||
      (*scope)["repository_id"].get<std::string>() != record.stream.repository_id() ||
      (*scope)["session_id"].get<std::string>() != record.stream.session_id()) {
    return "transition scope must belong to the record stream";
  }
  return {};
}

}  // namespace

JournalRecord build_journal_record(const JournalAppend& request,
                                   const std::optional<std::string>& previous_record_digest) {
  if (request.expected_revision < 0) throw InvalidArgument("expected_revision must be >= 0");
  require_trimmed(request.event_id, "event_id");
  require_digest(request.event_content_digest, "event_content_digest");
  require_trimmed(request.reducer_version, "reducer_version");
  if (previous_record_digest) require_digest(*previous_record_digest, "previous_record_digest");
  CTX_CHECK(previous_record_digest.has_value() == (request.expected_revision > 0));
  JournalRecord record{
      .stream = request.stream,
      .revision = request.expected_revision + 1,
      .event_id = request.event_id,
      .event_content_digest = request.event_content_digest,
      .replay_json = request.replay_json,
      .replay_digest = core::sha256_hex(request.replay_json),
      .transition_json = request.transition_json,
      .transition_digest = core::sha256_hex(request.transition_json),
      .result_state_json = request.result_state_json,
      .result_state_digest = core::sha256_hex(request.result_state_json),
      .previous_record_digest = previous_record_digest,
      .record_digest = {},
      .privacy_classification = request.privacy_classification,
      .retention_class = request.retention_class,
      .reducer_version = request.reducer_version,
  };
  if (std::string problem = record_problem(record); !problem.empty()) {
    throw InvalidArgument(problem);
  }
  record.record_digest = journal_record_digest(record);
  return record;
}

void verify_journal_record(const JournalRecord& record) {
  auto fail = [&](const std::string& what) {
    throw JournalCorruption("journal record " + std::to_string(record.revision) + ": " + what);
  };
  if (std::string problem = record_problem(record); !problem.empty()) fail(problem);
  if (record.replay_digest != core::sha256_hex(record.replay_json)) {
    fail("replay_digest does not match canonical content");
  }
  if (record.transition_digest != core::sha256_hex(record.transition_json)) {
    fail("transition_digest does not match canonical content");
  }
  if (record.result_state_digest != core::sha256_hex(record.result_state_json)) {
    fail("result_state_digest does not match canonical content");
  }
  if (record.previous_record_digest.has_value() != (record.revision > 1)) {
    fail("previous_record_digest must be null exactly at revision 1");
  }
  if (record.record_digest != journal_record_digest(record)) {
    fail("record_digest does not match record content");
  }
}

void verify_journal_chain(const std::vector<JournalRecord>& records, const JournalRecord* anchor) {
  const JournalRecord* previous = anchor;
  if (anchor != nullptr) verify_journal_record(*anchor);
  for (const JournalRecord& record : records) {
    Revision expected = previous == nullptr ? 1 : previous->revision + 1;
    if (record.revision != expected) {
      throw JournalCorruption("journal revision gap: expected revision " +
                              std::to_string(expected) + ", found " +
                              std::to_string(record.revision));
    }
    if (previous != nullptr && previous->stream != record.stream) {
      throw JournalCorruption("journal chain mismatch: record stream changed");
    }
    std::optional<std::string> link;
    if (previous != nullptr) link = previous->record_digest;
    if (record.previous_record_digest != link) {
      throw JournalCorruption("journal chain mismatch at revision " +
                              std::to_string(record.revision));
    }
    verify_journal_record(record);
    previous = &record;
  }
}

}  // namespace ctx::engine
