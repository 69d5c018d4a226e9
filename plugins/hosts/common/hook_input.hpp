// Reading host hook payloads for the in-tree host adapters (Claude Code, Codex, generic): bounded,
// UTF-8-checked, shallow JSON objects; the common hook fields with their types checked; signal
// tokens; the keyed scope and work reference. Pure functions; thread-safe. No function here ever
// copies prompt text into a result or an error message.
//
// Signals are lower-cased ASCII word tokens: the maximal runs of [a-z0-9] (after ASCII
// lower-casing; every other byte, non-ASCII included, separates), 1..kMaxTokenChars long, sorted
// and de-duplicated, at most kMaxSignals (the first distinct ones in input order are kept).
// The runtime later keeps only tokens that are terms of the imported catalog's vocabulary.
//
// Work reference: "wrk_" + hex(HMAC-SHA256(installation key, "ctx.host.work-ref-v1\0" ||
// compact JSON of {adapter, event, session_id, [turn_id], [prompt_id], [tool_use_id],
// [prompt_digest]})), where prompt_digest is the SHA-256 of the prompt bytes and never leaves
// the HMAC input. Workspace: "ws-" + first 32 hex of HMAC(key, "ctx.host.workspace-v1\0" || cwd)
// ("ws-none" without cwd); the repository id is the workspace id (cwd -> repository).
#ifndef CTX_PLUGINS_HOSTS_COMMON_HOOK_INPUT_HPP_
#define CTX_PLUGINS_HOSTS_COMMON_HOOK_INPUT_HPP_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace ctx::host_adapters {

using Json = nlohmann::json;

inline constexpr std::size_t kMaxPayloadBytes = std::size_t{1} << 20;  // 1 MiB
inline constexpr int kMaxPayloadDepth = 32;
inline constexpr std::size_t kMaxSignals = 256;
inline constexpr std::size_t kMaxTokenChars = 64;
inline constexpr std::size_t kInstallationKeyBytes = 32;
inline constexpr std::string_view kIgnoredEvent = "ignored";

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF).
bool is_valid_utf8(std::string_view text) noexcept;

// Parses a hook payload or reply request. Errors (InvalidArgument, naming `what`, never quoting
// the input): "is empty", "is larger than 1 MiB", "is not valid UTF-8", "is nested too deeply",
// "is not valid json", "has a duplicate key", "is not a json object".
Json read_json_object(std::string_view text, std::string_view what);

// The 32-byte installation key from 64 hex characters. Errors: InvalidArgument naming `what`
// (never the value).
std::string parse_installation_key(std::string_view hex, std::string_view what);

// The language token of a file path ("src/a.py" -> "python", "Dockerfile" -> "docker"), or "".
std::string_view language_for_path(std::string_view path);
// The language token of an extension without the dot ("rs" -> "rust"), or "".
std::string_view language_for_extension(std::string_view extension);

// Collects signal tokens (see the file comment).
class SignalSet {
 public:
  // Adds every word token of `text`.
  void add_words(std::string_view text);
  // Adds the language of `path` and the tokens of its extension.
  void add_path(std::string_view path);
  // Sorted tokens as a JSON array of strings.
  Json to_json() const;

 private:
  void add(std::string token);
  std::set<std::string> tokens_;
};

// The hook fields every adapter reads, type-checked. Optional members are absent when the payload
// omits them (or sends null where the host documents null).
struct HookFields {
  std::string event;       // hook_event_name, 1..64 bytes
  std::string session_id;  // 1..256 bytes
  std::optional<std::string> cwd;
  std::optional<std::string> prompt;
  std::optional<std::string> tool_name;
  const Json* tool_input = nullptr;  // an object inside the payload, when present
  std::optional<std::string> turn_id;
  std::optional<std::string> prompt_id;
  std::optional<std::string> tool_use_id;
  std::optional<std::string> source;   // SessionStart
  std::optional<std::string> trigger;  // PreCompact / PostCompact
  std::optional<std::string> reason;   // SessionEnd
  bool in_subagent = false;            // agent_id or agent_type present
};

// Reads and type-checks the common fields of `payload` (a parsed object). Every documented field
// that is present must have its documented type: strings (transcript_path and
// last_assistant_message may also be null), stop_hook_active a boolean, tool_input an object.
// Unknown fields are ignored. Errors: InvalidArgument "hook payload <field> ..." (never the value).
HookFields read_hook_fields(const Json& payload);

// The host's event name when it is one of `documented`, else kIgnoredEvent.
std::string classify_event(const HookFields& fields, const std::set<std::string>& documented);

// Signals of a documented event: prompt words (UserPromptSubmit), the tool name's words, the
// language of tool_input.file_path / path, and the words of a Bash tool_input.command.
void add_event_signals(const HookFields& fields, std::string_view event, SignalSet& signals);

// [A-Za-z0-9][A-Za-z0-9._:@-]{0,127}: the engine's token grammar (support::is_token).
bool is_engine_token(std::string_view text) noexcept;

// A session id usable as an engine token ([A-Za-z0-9][A-Za-z0-9._:@-]{0,127}) as it is; any
// other one becomes "ses-" + first 32 hex of HMAC(key, "ctx.host.session-v1\0" || id).
std::string session_token(std::string_view session_id, std::string_view key);

// {"tenant_id","workspace_id","repository_id","session_id","exposure_id","host_context_id"}.
Json build_scope(const HookFields& fields, std::string_view key, std::string_view tenant_id,
                 std::string_view adapter_id);

// {"id": "wrk_<64 hex>", "event": event} (see the file comment).
Json build_work_ref(const HookFields& fields, std::string_view event, std::string_view key,
                    std::string_view adapter_id);

// Lower-case token of an open host string (source, trigger, reason): the value itself when it is
// [a-z0-9_-]{1,32}, else "other".
std::string open_token(std::string_view value);

}  // namespace ctx::host_adapters

#endif  // CTX_PLUGINS_HOSTS_COMMON_HOOK_INPUT_HPP_
