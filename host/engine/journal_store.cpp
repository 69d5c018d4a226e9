#include "host/engine/journal_store.hpp"

#include <mutex>
#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/core/lru_map.hpp"
#include "host/engine/canonical_text.hpp"

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
  return core::sha256_hex(CanonicalObject()
                              .string("event_content_digest", record.event_content_digest)
                              .string("event_id", record.event_id)
                              .optional_string("previous_record_digest",
                                               record.previous_record_digest)
                              .string("privacy_classification",
                                      to_string(record.privacy_classification))
                              .string("reducer_version", record.reducer_version)
                              .string("replay_digest", record.replay_digest)
                              .string("result_state_digest", record.result_state_digest)
                              .string("retention_class", to_string(record.retention_class))
                              .integer("revision", record.revision)
                              .string("stream_key", record.stream.stream_key())
                              .string("transition_digest", record.transition_digest)
                              .finish());
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

// Returns an empty string when `record`'s plain fields are sound, else the reason.
std::string field_problem(const JournalRecord& record) {
  if (record.revision < 1) return "revision must be >= 1";
  if (!is_trimmed(record.event_id)) return "event_id must be a non-empty trimmed string";
  if (!is_trimmed(record.reducer_version)) {
    return "reducer_version must be a non-empty trimmed string";
  }
  if (!core::is_sha256_hex(record.event_content_digest)) {
    return "event_content_digest must be a lowercase sha-256 digest";
  }
  return {};
}

// The binding a transition text names, or the reason it names none. `json` is canonical.
struct Binding {
  std::string event_id;
  Revision to_revision = 0;
  std::optional<StreamId> stream;
  std::string problem;
};

Binding read_binding(const core::Json& transition) {
  Binding out;
  if (!transition.is_object()) {
    out.problem = "transition_json must be an object";
    return out;
  }
  auto event_id = transition.find("event_id");
  auto to_revision = transition.find("to_revision");
  if (event_id == transition.end() || !event_id->is_string() ||
      to_revision == transition.end() || !to_revision->is_number_integer()) {
    out.problem = "transition must name the record event id and revision";
    return out;
  }
  out.event_id = event_id->get<std::string>();
  out.to_revision = to_revision->get<std::int64_t>();
  auto scope = transition.find("scope");
  std::string parts[4];
  const char* keys[] = {"tenant_id", "workspace_id", "repository_id", "session_id"};
  bool ok = scope != transition.end() && scope->is_object();
  for (int i = 0; ok && i < 4; ++i) {
    auto it = scope->find(keys[i]);
    ok = it != scope->end() && it->is_string();
    if (ok) parts[i] = it->get<std::string>();
  }
  try {
    if (ok) out.stream.emplace(parts[0], parts[1], parts[2], parts[3]);
  } catch (const InvalidArgument&) {
    ok = false;
  }
  if (!ok) out.problem = "transition scope must belong to the record stream";
  return out;
}

// Returns an empty string when `binding` names `event_id`, `revision` and `stream`.
std::string binding_problem(const std::string& event_id, Revision to_revision,
                            const StreamId& stream, const std::string& bound_event_id,
                            Revision bound_revision, const StreamId& bound_stream) {
  if (bound_event_id != event_id || bound_revision != to_revision) {
    return "transition must name the record event id and revision";
  }
  if (!(bound_stream == stream)) return "transition scope must belong to the record stream";
  return {};
}

// Returns an empty string when the stored texts of `record` are canonical and its transition
// names the record's event id, revision and stream, else the reason.
std::string text_problem(const JournalRecord& record) {
  try {
    core::parse_canonical_json(record.replay_json);
  } catch (const InvalidArgument&) {
    return "replay_json must be canonical json";
  }
  core::Json transition;
  try {
    transition = core::parse_canonical_json(record.transition_json);
  } catch (const InvalidArgument&) {
    return "transition_json must be canonical json";
  }
  Binding binding = read_binding(transition);
  if (!binding.problem.empty()) return binding.problem;
  return binding_problem(record.event_id, record.revision, record.stream, binding.event_id,
                         binding.to_revision, *binding.stream);
}

}  // namespace

TransitionText TransitionText::verify(std::string_view text) {
  CanonicalText canonical = CanonicalText::verify(text, "transition_json");
  Binding binding = read_binding(core::parse_json(canonical.text()));
  if (!binding.problem.empty()) throw InvalidArgument(binding.problem);
  return TransitionText{std::move(canonical), std::move(binding.event_id), binding.to_revision,
                        std::move(*binding.stream)};
}

JournalRecord build_journal_record(const JournalAppend& request) {
  if (request.expected_revision < 0) throw InvalidArgument("expected_revision must be >= 0");
  require_trimmed(request.event_id, "event_id");
  require_digest(request.event_content_digest, "event_content_digest");
  require_trimmed(request.reducer_version, "reducer_version");
  for (const auto& [text, name] : {std::pair{&request.replay, "replay"},
                                   std::pair{&request.transition.text, "transition"},
                                   std::pair{&request.result_state, "result_state"}}) {
    if (text->text().empty()) throw InvalidArgument(std::string(name) + " must be set");
  }
  if (std::string problem = binding_problem(
          request.event_id, request.expected_revision + 1, request.stream,
          request.transition.event_id, request.transition.to_revision, request.transition.stream);
      !problem.empty()) {
    throw InvalidArgument(problem);
  }
  JournalRecord record{
      .stream = request.stream,
      .revision = request.expected_revision + 1,
      .event_id = request.event_id,
      .event_content_digest = request.event_content_digest,
      .replay_json = request.replay.text(),
      .replay_digest = request.replay.digest(),
      .transition_json = request.transition.text.text(),
      .transition_digest = request.transition.text.digest(),
      .result_state_digest = request.result_state.digest(),
      .previous_record_digest = std::nullopt,
      .record_digest = {},
      .privacy_classification = request.privacy_classification,
      .retention_class = request.retention_class,
      .reducer_version = request.reducer_version,
  };
  if (std::string problem = field_problem(record); !problem.empty()) {
    throw InvalidArgument(problem);
  }
  return record;
}

void chain_journal_record(JournalRecord& record,
                          const std::optional<std::string>& previous_record_digest) {
  if (previous_record_digest) require_digest(*previous_record_digest, "previous_record_digest");
  CTX_CHECK(previous_record_digest.has_value() == (record.revision > 1));
  record.previous_record_digest = previous_record_digest;
  record.record_digest = journal_record_digest(record);
}

namespace {

// Records verified by this process, by record digest, least recently used evicted first.
// Bounded by count and bytes (a record above a quarter of the budget is not kept); an entry is
// only ever used after an exact field-wise comparison.
class VerifiedRecords {
 public:
  bool contains(const JournalRecord& record) {
    std::lock_guard lock(mutex_);
    const JournalRecord* seen = records_.find(record.record_digest);
    return seen != nullptr && *seen == record;
  }

  void remember(const JournalRecord& record) {
    std::lock_guard lock(mutex_);
    records_.put(record.record_digest, record, bytes_of(record));
  }

 private:
  static constexpr std::size_t kMaxBytes = 32u << 20;

  static std::size_t bytes_of(const JournalRecord& r) {
    return r.replay_json.size() + r.transition_json.size() + r.event_id.size() + 512;
  }

  std::mutex mutex_;
  core::LruMap<std::string, JournalRecord> records_{core::LruBounds{
      .max_entries = 512, .max_bytes = kMaxBytes, .max_entry_bytes = kMaxBytes / 4}};
};

VerifiedRecords& verified_records() {
  static VerifiedRecords* records = new VerifiedRecords();  // never destroyed (exit-safe)
  return *records;
}

thread_local bool t_fresh_verification = false;

void verify_journal_record_fully(const JournalRecord& record) {
  auto fail = [&](const std::string& what) {
    throw JournalCorruption("journal record " + std::to_string(record.revision) + ": " + what);
  };
  if (std::string problem = field_problem(record); !problem.empty()) fail(problem);
  if (!core::is_sha256_hex(record.result_state_digest)) {
    fail("result_state_digest must be a lowercase sha-256 digest");
  }
  if (record.replay_digest != core::sha256_hex(record.replay_json)) {
    fail("replay_digest does not match canonical content");
  }
  if (record.transition_digest != core::sha256_hex(record.transition_json)) {
    fail("transition_digest does not match canonical content");
  }
  if (record.previous_record_digest.has_value() != (record.revision > 1)) {
    fail("previous_record_digest must be null exactly at revision 1");
  }
  if (record.record_digest != journal_record_digest(record)) {
    fail("record_digest does not match record content");
  }
  if (std::string problem = text_problem(record); !problem.empty()) fail(problem);
}

}  // namespace

void verify_journal_record(const JournalRecord& record) {
  if (t_fresh_verification) {
    verify_journal_record_fully(record);
    return;
  }
  if (verified_records().contains(record)) return;
  verify_journal_record_fully(record);
  verified_records().remember(record);
}

FreshJournalVerification::FreshJournalVerification() noexcept
    : previous_(t_fresh_verification) {
  t_fresh_verification = true;
}

FreshJournalVerification::~FreshJournalVerification() { t_fresh_verification = previous_; }

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
