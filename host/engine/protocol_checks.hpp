// The engine protocol's validation rules (protocol.hpp's create/from_json apply them): field
// shapes, v3 action contracts and event payloads. Internal to host/engine; each check throws
// ProtocolValidationError (UnsupportedProtocolVersionError for the version) naming the field.
#ifndef CTX_HOST_ENGINE_PROTOCOL_CHECKS_HPP_
#define CTX_HOST_ENGINE_PROTOCOL_CHECKS_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/core/json_reader.hpp"
#include "host/engine/errors.hpp"
#include "host/engine/protocol.hpp"

namespace ctx::engine::protocol_checks {

using Reader = core::JsonObjectReader;
inline constexpr core::JsonErrorRaiser kRaise = core::raise_as<ProtocolValidationError>;

// `v` as JSON, null when absent.
inline Json opt(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }

// Event kinds that carry a planning decision's cause.
bool is_decision_causing(EventKind kind) noexcept;

// Throws ProtocolValidationError(message).
[[noreturn]] void fail(const std::string& message);
void require_version(const Json& value);
void require_trimmed(const std::string& value, std::string_view field);
void require_optional_trimmed(const std::optional<std::string>& value, std::string_view field);
void require_nonnegative(const Json& value, std::string_view field);
// Finite numbers, valid Unicode strings and keys, anywhere in `value`.
void require_json_value(const Json& value, const std::string& field);

// An action's kind-specific contract (physical, consent, bundle, notify).
HostAction::TypedPayload check_action_contract(const HostAction::Fields& a);
// ActionApplied / ActionFailed / ActionExpired payloads.
void check_receipt_payload(EventKind kind, const Json& payload);
void check_user_decision(const Json& payload, std::int64_t expected_revision);
void check_consent_expired(const Json& payload);

}  // namespace ctx::engine::protocol_checks

#endif  // CTX_HOST_ENGINE_PROTOCOL_CHECKS_HPP_
