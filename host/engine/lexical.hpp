// Lexical classes of spec §1.1 and the small validators every engine value builds on.
// Pure functions; thread-safe.
#ifndef CTX_HOST_ENGINE_LEXICAL_HPP_
#define CTX_HOST_ENGINE_LEXICAL_HPP_

#include <cstddef>
#include <string>
#include <string_view>

#include "host/core/json_reader.hpp"
#include "host/engine/vocabulary.hpp"

namespace ctx::engine {

inline constexpr std::size_t kMaxSelectedCapabilities = 5;
inline constexpr std::size_t kMaxMatchingSignals = 32;
inline constexpr std::size_t kMaxReasonCodes = 16;
inline constexpr std::size_t kMaxTokenChars = 128;
inline constexpr int kMaxPreparedContentBytes = 6000;
inline constexpr int kMaxPreparedContentTokens = 1500;

// Non-empty valid UTF-8, equal to its own Python strip(), no surrogate code points.
bool is_trimmed_string(std::string_view text) noexcept;

// Valid UTF-8 without surrogate code points (may be empty).
bool is_valid_unicode(std::string_view text) noexcept;

// Opaque replay / machine token: ^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$.
bool is_opaque_token(std::string_view text) noexcept;

// Canonical (engine) token: ^[a-z0-9][a-z0-9._:@-]{0,127}$.
bool is_canonical_token(std::string_view text) noexcept;

// Plugin id: ^[a-z0-9][a-z0-9._-]{0,63}$ (what a lock entry and a verifier registration name).
bool is_plugin_id(std::string_view text) noexcept;

// Capability name: ^[a-z0-9][a-z0-9._@-]{0,127}$ (no colon).
bool is_capability_name(std::string_view text) noexcept;

// skill, agent, mcp-server, harness.
bool is_capability_kind(std::string_view kind) noexcept;

// skill, agent, mcp-server (a harness is never installed).
bool is_installable_kind(std::string_view kind) noexcept;

// True when `capability_id` is exactly `kind + ":" + name`, ≤ 128 chars, with a declared kind.
bool is_capability_identity(std::string_view capability_id, std::string_view kind) noexcept;

// As above for a typed kind.
bool is_capability_identity(std::string_view capability_id, CapabilityKind kind) noexcept;
constexpr bool is_installable_kind(CapabilityKind kind) noexcept {
  return kind != CapabilityKind::kHarness;
}

// The kind prefix of a well-formed capability id, or "" when it has none.
std::string_view capability_kind_of(std::string_view capability_id) noexcept;

// Lower-case 64-hex SHA-256.
bool is_digest(std::string_view text) noexcept;

// Schema id for audit values: ^ctx\.[a-z0-9][a-z0-9.-]{0,126}$.
bool is_schema_id(std::string_view text) noexcept;

// The same classes as rules for core::JsonObjectReader::string(key, rule).
inline constexpr core::StringRule kTrimmed{is_trimmed_string, "a non-empty trimmed string"};
inline constexpr core::StringRule kDigest{is_digest, "a lowercase SHA-256 digest"};
inline constexpr core::StringRule kCanonicalToken{is_canonical_token, "a canonical token"};
inline constexpr core::StringRule kOpaqueToken{is_opaque_token, "an opaque safe token"};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_LEXICAL_HPP_
