#include "host/engine/replay.hpp"

#include <limits>
#include <set>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/engine/canonical_text.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/journal_store.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/reducer.hpp"

namespace ctx::engine {
namespace {

constexpr std::size_t kMaxDepth = 8;
constexpr std::size_t kMaxCollectionItems = 100;
constexpr std::size_t kMaxTotalItems = 500;
constexpr std::size_t kMaxStringBytes = 64 * 1024;
constexpr std::size_t kMaxEventBytes = 256 * 1024;
constexpr std::size_t kMaxSurrogateBytes = 32 * 1024;
constexpr std::size_t kMaxReplayBytes = 64 * 1024;

[[noreturn]] void privacy(const std::string& m) { throw ReplayPrivacyError(m); }
[[noreturn]] void invalid(const std::string& m) { throw ReplayValidationError(m); }
using Reader = core::JsonObjectReader;
constexpr core::JsonErrorRaiser kRaise = core::raise_as<ReplayValidationError>;

void bounds(const Json& value, std::size_t depth, std::size_t& total, const char* what) {
  if (depth > kMaxDepth) invalid(std::string(what) + " exceeds the maximum nesting depth");
  if (value.is_string() && value.get_ref<const std::string&>().size() > kMaxStringBytes) {
    invalid(std::string(what) + " string exceeds its size bound");
  }
  if (value.is_object() || value.is_array()) {
    if (value.size() > kMaxCollectionItems) {
      invalid(std::string(what) + " collection exceeds 100 items");
    }
    total += value.size();
    if (total > kMaxTotalItems) invalid(std::string(what) + " exceeds 500 items");
    for (const auto& item : value) bounds(item, depth + 1, total, what);
  }
}

// Every string and key inside a surrogate value is an opaque token.
void opaque_values(const Json& value) {
  if (value.is_string()) {
    if (!is_opaque_token(value.get_ref<const std::string&>())) {
      privacy("surrogate value must be an opaque safe token");
    }
  } else if (value.is_object()) {
    for (const auto& item : value.items()) {
      if (!is_opaque_token(item.key())) privacy("surrogate key must be an opaque safe token");
      opaque_values(item.value());
    }
  } else if (value.is_array()) {
    for (const auto& item : value) opaque_values(item);
  } else if (value.is_number_float()) {
    invalid("surrogate value must not contain floating point numbers");
  }
}

void require_token(const std::optional<std::string>& value, const char* field) {
  if (value && !is_opaque_token(*value)) {
    privacy(std::string(field) + " must be an opaque safe token");
  }
}

void require_digest(const std::optional<std::string>& value, const char* field) {
  if (value && !is_digest(*value)) {
    invalid(std::string(field) + " must be a lowercase SHA-256 digest");
  }
}

bool sorted_unique_tokens(const Json& value, std::size_t max) {
  if (!value.is_array() || value.size() > max) return false;
  std::string previous;
  bool first = true;
  for (const auto& item : value) {
    if (!item.is_string() || !is_canonical_token(item.get_ref<const std::string&>())) return false;
    if (!first && !(previous < item.get_ref<const std::string&>())) return false;
    previous = item.get<std::string>();
    first = false;
  }
  return true;
}

void approve_observation(const StructuredSurrogate& s) {
  const Json& v = s.value();
  if (s.schema_id() == "ctx.observation.opaque-ref" && s.schema_version() == 1) {
    if (!v.is_object() || v.size() != 2 || !v.contains("provider_id") ||
        !v.contains("content_digest") || !v.at("content_digest").is_string() ||
        !is_digest(v.at("content_digest").get_ref<const std::string&>())) {
      invalid("opaque-ref observation surrogate is malformed");
    }
    return;
  }
  if (s.schema_id() == "ctx.observation.current-work" && s.schema_version() == 1) {
    const Reader r(v, "current-work observation surrogate", kRaise);
    r.exact({"active_capability_ids", "baseline_capability_ids", "languages",
             "rejected_capability_ids", "requested_limit", "signals"});
    if (!sorted_unique_tokens(v.at("signals"), 32) ||
        !sorted_unique_tokens(v.at("languages"), 10) ||
        !sorted_unique_tokens(v.at("baseline_capability_ids"), 100) ||
        !sorted_unique_tokens(v.at("rejected_capability_ids"), 100) ||
        !sorted_unique_tokens(v.at("active_capability_ids"), 5)) {
      invalid("current-work observation lists must be sorted unique lower-case tokens");
    }
    const Json& limit = v.at("requested_limit");
    if (!limit.is_number_integer() ||
        (!limit.is_number_unsigned() && limit.get<std::int64_t>() < 0) ||
        (limit.is_number_unsigned() && limit.get<std::uint64_t>() > 5)) {
      invalid("current-work requested_limit must be between 0 and 5");
    }
    return;
  }
  privacy("surrogate schema is not approved for authoritative replay");
}

void approve_decision(const StructuredSurrogate& s) {
  if (s.schema_id() != kDecisionPlanSchema || s.schema_version() != 3) {
    privacy("surrogate schema is not approved for authoritative replay");
  }
  Reader(s.value(), "decision surrogate", kRaise)
      .exact({"abstention_code", "benefit_audit", "capabilities", "status"});
}

Json surrogate_json(const std::optional<StructuredSurrogate>& s) {
  return s ? s->to_json() : Json(nullptr);
}

}  // namespace

// ---- StructuredSurrogate --------------------------------------------------------------------

StructuredSurrogate StructuredSurrogate::create(std::string schema_id, std::int64_t version,
                                                Json value) {
  if (!is_opaque_token(schema_id)) privacy("schema_id must be an opaque safe token");
  if (version < 1) invalid("schema_version must be a positive integer");
  if (!value.is_object()) invalid("surrogate value must be an object");
  std::size_t total = 0;
  bounds(value, 1, total, "surrogate value");
  opaque_values(value);
  StructuredSurrogate out;
  out.schema_id_ = std::move(schema_id);
  out.schema_version_ = version;
  out.value_ = std::move(value);
  out.value_text_ = core::canonical_json(out.value_);
  if (out.value_text_.size() > kMaxSurrogateBytes) {
    invalid("surrogate value exceeds its size bound");
  }
  out.value_digest_ = core::sha256_hex(out.value_text_);
  return out;
}

StructuredSurrogate StructuredSurrogate::from_json(const Json& value) {
  const Reader r(value, "structured surrogate", kRaise);
  r.exact({"schema_id", "schema_version", "value", "value_digest"});
  auto out = create(r.string("schema_id"),
                    r.integer("schema_version", std::numeric_limits<std::int64_t>::min(),
                              std::numeric_limits<std::int64_t>::max()),
                    r.at("value"));
  if (r.string_ref("value_digest") != out.value_digest_) {
    throw ReplayBindingError("structured surrogate value_digest does not match its value");
  }
  return out;
}

Json StructuredSurrogate::to_json() const {
  return {{"schema_id", schema_id_},
          {"schema_version", schema_version_},
          {"value", value_},
          {"value_digest", value_digest_}};
}

std::string StructuredSurrogate::to_json_text() const {
  return CanonicalObject()
      .string("schema_id", schema_id_)
      .integer("schema_version", schema_version_)
      .text("value", value_text_)
      .string("value_digest", value_digest_)
      .finish();
}

// ---- preflight ------------------------------------------------------------------------------

PreflightedEvent preflight_event(const EngineEvent& ingress) {
  // The event's canonical text and digest were made once, with the event; not again here.
  if (ingress.to_json_text().size() > kMaxEventBytes) invalid("event exceeds its size bound");
  std::size_t total = 0;
  bounds(ingress.payload(), 1, total, "payload");
  const Retention retention = ingress.privacy().retention();
  if (retention == Retention::kEphemeral || retention == Retention::kAggregate) {
    privacy("retention is not safe for authoritative replay");
  }
  if (!is_opaque_token(ingress.event_id())) privacy("event_id must be an opaque safe token");
  const auto& s = ingress.scope();
  for (const auto& [value, field] :
       {std::pair{&s.tenant_id(), "tenant_id"}, std::pair{&s.workspace_id(), "workspace_id"},
        std::pair{&s.repository_id(), "repository_id"}, std::pair{&s.session_id(), "session_id"},
        std::pair{&s.exposure_id(), "exposure_id"},
        std::pair{&s.host_context_id(), "host_context_id"}}) {
    if (!is_opaque_token(*value)) privacy(std::string(field) + " must be an opaque safe token");
  }
  require_token(s.parent_exposure_id(), "parent_exposure_id");
  require_token(ingress.correlation_id(), "correlation_id");
  require_token(ingress.causation_id(), "causation_id");
  require_token(ingress.engine_version(), "engine_version");
  require_token(ingress.planner_version(), "planner_version");
  require_token(ingress.policy_version(), "policy_version");
  require_digest(ingress.host_descriptor_digest(), "host_descriptor_digest");
  require_digest(ingress.catalog_snapshot_digest(), "catalog_snapshot_digest");
  require_digest(ingress.semantic_model_digest(), "semantic_model_digest");
  require_digest(ingress.semantic_index_digest(), "semantic_index_digest");
  require_digest(ingress.work_signature(), "work_signature");
  const Json& seed = ingress.random_seed();
  if (seed.is_string() && !is_opaque_token(seed.get_ref<const std::string&>())) {
    privacy("random_seed must be an integer or an opaque safe token");
  }
  const EventKind kind = ingress.event_kind();
  if (kind == EventKind::kSessionStarted && !ingress.host_descriptor_digest()) {
    invalid("SessionStarted requires host_descriptor_digest");
  }

  PreflightedEvent out{ingress, ingress, ingress.content_digest()};
  // The reducer event is the ingress event unless its payload is sanitised below (then it is
  // rebuilt once, with its own text and digest).
  std::optional<Json> sanitised;
  const Json& payload = ingress.payload();
  if (kind == EventKind::kWorkspaceObserved || kind == EventKind::kIntentObserved ||
      kind == EventKind::kDevelopmentObserved || kind == EventKind::kValidationObserved) {
    const auto it = payload.find("observation_ref");
    if (payload.size() != 1 || it == payload.end() || !it->is_object() || it->size() != 3 ||
        !it->contains("provider_id") || !it->contains("opaque_id") ||
        !it->contains("content_digest")) {
      privacy("observation payload must contain only an opaque observation reference");
    }
    const Json& ref = *it;
    for (const char* key : {"provider_id", "opaque_id"}) {
      if (!ref.at(key).is_string() || !is_opaque_token(ref.at(key).get_ref<const std::string&>())) {
        privacy(std::string("observation ") + key + " must be an opaque safe token");
      }
    }
    if (!ref.at("content_digest").is_string() ||
        !is_digest(ref.at("content_digest").get_ref<const std::string&>())) {
      invalid("observation content_digest must be a lowercase SHA-256 digest");
    }
    out.observation_reference = ObservationReference{ref.at("provider_id").get<std::string>(),
                                                     ref.at("opaque_id").get<std::string>(),
                                                     ref.at("content_digest").get<std::string>()};
    sanitised = Json::object();
  } else if (kind == EventKind::kTurnStarting || kind == EventKind::kTurnEnded ||
             kind == EventKind::kSessionEnded) {
    if (!payload.empty()) invalid(ingress.kind() + " payload must be empty");
  } else if (kind == EventKind::kActionFailed) {
    sanitised = payload;
    (*sanitised)["error"] = {{"code", "redacted-host-failure"}};
  }
  if (sanitised) {
    auto fields = ingress.fields();
    fields.payload = std::move(*sanitised);
    out.reducer_event = EngineEvent::create(std::move(fields));
  }
  return out;
}

// ---- ReplayInput ----------------------------------------------------------------------------

Json ReplayInput::to_json() const {
  return {{"decision_surrogate", surrogate_json(decision_surrogate)},
          {"normalizer_version", normalizer_version},
          {"observation_surrogate", surrogate_json(observation_surrogate)},
          {"reducer_event", reducer_event.to_json()},
          {"reducer_version", reducer_version},
          {"schema", kReplayInputSchema},
          {"schema_version", 1},
          {"source_event_content_digest", source_event_content_digest}};
}

std::string ReplayInput::to_json_text() const {
  const auto surrogate = [](const std::optional<StructuredSurrogate>& s) {
    return s ? s->to_json_text() : std::string("null");
  };
  std::string text = CanonicalObject()
                         .text("decision_surrogate", surrogate(decision_surrogate))
                         .string("normalizer_version", normalizer_version)
                         .text("observation_surrogate", surrogate(observation_surrogate))
                         .text("reducer_event", reducer_event.to_json_text())
                         .string("reducer_version", reducer_version)
                         .string("schema", kReplayInputSchema)
                         .integer("schema_version", 1)
                         .string("source_event_content_digest", source_event_content_digest)
                         .finish();
  if (text.size() > kMaxReplayBytes) invalid("replay input exceeds 64 KiB");
  return text;
}

ReplayInput ReplayInput::from_json_text(std::string_view text) {
  Json value;
  try {
    value = core::parse_canonical_json(text);
  } catch (const InvalidArgument& e) {
    invalid(std::string("replay input must be canonical json: ") + e.what());
  }
  const Reader r(value, "replay input", kRaise);
  r.exact({"decision_surrogate", "normalizer_version", "observation_surrogate", "reducer_event",
           "reducer_version", "schema", "schema_version", "source_event_content_digest"});
  r.literal("schema", kReplayInputSchema, "replay input schema");
  if (r.integer("schema_version", 1, 1) != 1) invalid("replay input schema is unsupported");
  ReplayInput out{EngineEvent::from_json(r.at("reducer_event")), r.string("reducer_version"),
                  r.string("source_event_content_digest")};
  out.normalizer_version = r.string("normalizer_version");
  if (const Json* observation = r.find("observation_surrogate")) {
    out.observation_surrogate = StructuredSurrogate::from_json(*observation);
  }
  if (const Json* decision = r.find("decision_surrogate")) {
    out.decision_surrogate = StructuredSurrogate::from_json(*decision);
  }
  return out;
}

ReplayInput prepare_replay_input(const PreflightedEvent& preflighted, const EngineState* state,
                                 const ObservationNormalizer* normalizer,
                                 const DecisionPlanner* planner) {
  ReplayInput out{preflighted.reducer_event, std::string(kReducerV3),
                  preflighted.source_event_content_digest};
  const auto& event = preflighted.reducer_event;
  if (preflighted.observation_reference) {
    if (!normalizer || !*normalizer) {
      throw UnsupportedReplayEvent("event requires a typed observation normalizer");
    }
    StructuredSurrogate observation = [&] {
      try {
        return (*normalizer)(*preflighted.observation_reference, state);
      } catch (const ReplayError&) {
        throw;
      } catch (const StoreBusy&) {
        throw;  // retryable: crosses the boundary as itself
      } catch (const std::exception&) {
        invalid("typed observation normalization failed");
      }
    }();
    approve_observation(observation);
    out.observation_surrogate = observation;
    if (is_planning_kind(event.event_kind())) {
      if (!planner || !*planner) {
        throw UnsupportedReplayEvent("planning event requires a typed decision planner");
      }
      PlanningContext context{event.planner_version().value_or(""),
                              event.catalog_snapshot_digest().value_or("")};
      StructuredSurrogate decision = [&] {
        try {
          return (*planner)(observation, context, state);
        } catch (const ReplayError&) {
          throw;
        } catch (const StoreBusy&) {
          throw;  // retryable: crosses the boundary as itself
        } catch (const std::exception&) {
          invalid("typed decision planning failed");
        }
      }();
      approve_decision(decision);
      out.decision_surrogate = decision;
    }
  }
  return out;
}

}  // namespace ctx::engine
