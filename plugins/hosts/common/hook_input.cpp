#include "plugins/hosts/common/hook_input.hpp"

#include <cstdint>
#include <ctx/sdk/error.hpp>
#include <ctx/support/text.hpp>
#include <map>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"

namespace ctx::host_adapters {
namespace {

namespace pc = ctx::plugin_common;

constexpr std::size_t kMaxEventBytes = 64;
constexpr std::size_t kMaxSessionBytes = 256;
constexpr std::string_view kWorkRefDomain{"ctx.host.work-ref-v1\0", 21};
constexpr std::string_view kWorkspaceDomain{"ctx.host.workspace-v1\0", 22};
constexpr std::string_view kSessionDomain{"ctx.host.session-v1\0", 20};

char lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool is_word_byte(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lower(c);
  return out;
}

std::string message(std::string_view what, std::string_view fact) {
  std::string text(what);
  text += ' ';
  text += fact;
  return text;
}

// Deepest [ / { nesting outside strings; stops counting once past the limit.
bool nested_deeper_than(std::string_view text, int limit) noexcept {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// The member `key` when it is a string; nullopt when absent (or null and `nullable`).
std::optional<std::string> string_field(const Json& payload, std::string_view key,
                                        bool nullable = false) {
  const auto it = payload.find(key);
  if (it == payload.end() || (nullable && it->is_null())) return std::nullopt;
  if (!it->is_string()) {
    throw InvalidArgument("hook payload " + std::string(key) + " must be a string" +
                          (nullable ? " or null" : ""));
  }
  return it->get<std::string>();
}

std::string bounded_string(const Json& payload, std::string_view key, std::size_t max_bytes) {
  const auto value = string_field(payload, key);
  if (!value || value->empty() || value->size() > max_bytes) {
    throw InvalidArgument("hook payload needs " + std::string(key) + " as a string of 1 to " +
                          std::to_string(max_bytes) + " bytes");
  }
  return *value;
}


std::string keyed_hex(std::string_view key, std::string_view domain, std::string_view text) {
  std::string input(domain);
  input += text;
  return pc::to_hex(pc::hmac_sha256(key, input));
}

}  // namespace

bool is_engine_token(std::string_view text) noexcept { return support::is_token(text); }

bool is_valid_utf8(std::string_view text) noexcept {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<std::uint8_t>(text[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
      length = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      length = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      length = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto b = static_cast<std::uint8_t>(text[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

Json read_json_object(std::string_view text, std::string_view what) {
  if (text.empty()) throw InvalidArgument(message(what, "is empty"));
  if (text.size() > kMaxPayloadBytes) throw InvalidArgument(message(what, "is larger than 1 MiB"));
  if (!is_valid_utf8(text)) throw InvalidArgument(message(what, "is not valid UTF-8"));
  if (nested_deeper_than(text, kMaxPayloadDepth)) {
    throw InvalidArgument(message(what, "is nested too deeply"));
  }
  return pc::parse_object(text, what);
}

std::string parse_installation_key(std::string_view hex, std::string_view what) {
  if (hex.size() != 2 * kInstallationKeyBytes) {
    throw InvalidArgument(message(what, "installation_key must be 64 hex characters"));
  }
  return pc::from_hex(hex, std::string(what) + " installation_key");
}

std::string_view language_for_extension(std::string_view extension) {
  // clang-format off
  static const std::map<std::string, std::string, std::less<>> kLanguages = {
      {"c", "c"},             {"cc", "cpp"},          {"cjs", "javascript"}, {"cpp", "cpp"},
      {"cs", "csharp"},       {"css", "css"},         {"csv", "csv"},        {"cxx", "cpp"},
      {"docx", "docx"},       {"ex", "elixir"},       {"exs", "elixir"},     {"go", "golang"},
      {"h", "c"},             {"hh", "cpp"},          {"hpp", "cpp"},        {"hs", "haskell"},
      {"html", "html"},       {"java", "java"},       {"js", "javascript"},  {"json", "json"},
      {"jsx", "javascript"},  {"kt", "kotlin"},       {"md", "markdown"},    {"mjs", "javascript"},
      {"pdf", "pdf"},         {"php", "php"},         {"pptx", "pptx"},      {"ps1", "powershell"},
      {"py", "python"},       {"rb", "ruby"},         {"rs", "rust"},        {"scala", "scala"},
      {"sh", "bash"},         {"sql", "sql"},         {"svelte", "svelte"},  {"swift", "swift"},
      {"tex", "latex"},       {"tf", "terraform"},    {"toml", "toml"},      {"ts", "typescript"},
      {"tsx", "typescript"},  {"vue", "vue"},         {"xlsx", "xlsx"},      {"yaml", "yaml"},
      {"yml", "yaml"}};
  // clang-format on
  const auto it = kLanguages.find(lowered(extension));
  return it == kLanguages.end() ? std::string_view{} : std::string_view(it->second);
}

std::string_view language_for_path(std::string_view path) {
  const auto slash = path.find_last_of('/');
  const std::string base = lowered(slash == std::string_view::npos ? path : path.substr(slash + 1));
  if (base == "dockerfile") return "docker";
  if (base == "cmakelists.txt") return "cmake";
  if (base == "makefile") return "make";
  const auto dot = base.find_last_of('.');
  if (dot == std::string::npos || dot + 1 == base.size()) return {};
  return language_for_extension(std::string_view(base).substr(dot + 1));
}

void SignalSet::add(std::string token) {
  if (token.empty() || token.size() > kMaxTokenChars) return;
  if (tokens_.size() >= kMaxSignals && tokens_.count(token) == 0) return;
  tokens_.insert(std::move(token));
}

void SignalSet::add_words(std::string_view text) {
  std::string word;
  bool overlong = false;
  const auto flush = [&] {
    if (!overlong) add(word);
    word.clear();
    overlong = false;
  };
  for (const char raw : text) {
    const char c = lower(raw);
    if (!is_word_byte(c)) {
      flush();
      continue;
    }
    if (word.size() == kMaxTokenChars) {
      overlong = true;  // a run longer than a word (a hash, a key): dropped whole
    } else {
      word.push_back(c);
    }
  }
  flush();
}

void SignalSet::add_path(std::string_view path) {
  add(std::string(language_for_path(path)));
  const auto slash = path.find_last_of('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (const auto dot = base.find_last_of('.'); dot != std::string_view::npos) {
    add_words(base.substr(dot + 1));
  }
}

Json SignalSet::to_json() const {
  Json out = Json::array();
  for (const std::string& token : tokens_) out.push_back(token);
  return out;
}

HookFields read_hook_fields(const Json& payload) {
  HookFields fields;
  fields.event = bounded_string(payload, "hook_event_name", kMaxEventBytes);
  fields.session_id = bounded_string(payload, "session_id", kMaxSessionBytes);
  fields.cwd = string_field(payload, "cwd");
  fields.prompt = string_field(payload, "prompt");
  fields.tool_name = string_field(payload, "tool_name");
  fields.turn_id = string_field(payload, "turn_id");
  fields.prompt_id = string_field(payload, "prompt_id");
  fields.tool_use_id = string_field(payload, "tool_use_id");
  fields.source = string_field(payload, "source");
  fields.trigger = string_field(payload, "trigger");
  fields.reason = string_field(payload, "reason");
  const auto agent_id = string_field(payload, "agent_id");
  const auto agent_type = string_field(payload, "agent_type");
  fields.in_subagent = agent_id.has_value() || agent_type.has_value();
  string_field(payload, "transcript_path", /*nullable=*/true);
  string_field(payload, "permission_mode");
  if (const auto it = payload.find("stop_hook_active"); it != payload.end() && !it->is_boolean()) {
    throw InvalidArgument("hook payload stop_hook_active must be a boolean");
  }
  if (const auto it = payload.find("tool_input"); it != payload.end() && !it->is_null()) {
    if (!it->is_object()) throw InvalidArgument("hook payload tool_input must be an object");
    fields.tool_input = &*it;
  }
  return fields;
}

std::string classify_event(const HookFields& fields, const std::set<std::string>& documented) {
  if (documented.count(fields.event) == 0) return std::string(kIgnoredEvent);
  if (fields.event == "UserPromptSubmit" && !fields.prompt) {
    throw InvalidArgument("hook payload UserPromptSubmit needs a string prompt");
  }
  if ((fields.event == "PreToolUse" || fields.event == "PostToolUse") && !fields.tool_name) {
    throw InvalidArgument("hook payload " + fields.event + " needs a string tool_name");
  }
  return fields.event;
}

void add_event_signals(const HookFields& fields, std::string_view event, SignalSet& signals) {
  if (event == "UserPromptSubmit" && fields.prompt) signals.add_words(*fields.prompt);
  if (event != "PreToolUse" && event != "PostToolUse") return;
  if (fields.tool_name) signals.add_words(*fields.tool_name);
  if (fields.tool_input == nullptr) return;
  for (const char* key : {"file_path", "path", "notebook_path"}) {
    if (const auto it = fields.tool_input->find(key);
        it != fields.tool_input->end() && it->is_string()) {
      signals.add_path(it->get_ref<const std::string&>());
    }
  }
  if (fields.tool_name && *fields.tool_name == "Bash") {
    if (const auto it = fields.tool_input->find("command");
        it != fields.tool_input->end() && it->is_string()) {
      signals.add_words(it->get_ref<const std::string&>());
    }
  }
}

std::string session_token(std::string_view session_id, std::string_view key) {
  if (is_engine_token(session_id)) return std::string(session_id);
  return "ses-" + keyed_hex(key, kSessionDomain, session_id).substr(0, 32);
}

Json build_scope(const HookFields& fields, std::string_view key, std::string_view tenant_id,
                 std::string_view adapter_id) {
  const std::string workspace =
      fields.cwd ? "ws-" + keyed_hex(key, kWorkspaceDomain, *fields.cwd).substr(0, 32)
                 : std::string("ws-none");
  return Json{{"tenant_id", tenant_id},     {"workspace_id", workspace},
              {"repository_id", workspace}, {"session_id", session_token(fields.session_id, key)},
              {"exposure_id", adapter_id},  {"host_context_id", adapter_id}};
}

Json build_work_ref(const HookFields& fields, std::string_view event, std::string_view key,
                    std::string_view adapter_id) {
  Json basis = {{"adapter", adapter_id}, {"event", event}, {"session_id", fields.session_id}};
  if (fields.turn_id) basis["turn_id"] = *fields.turn_id;
  if (fields.prompt_id) basis["prompt_id"] = *fields.prompt_id;
  if (fields.tool_use_id) basis["tool_use_id"] = *fields.tool_use_id;
  if (fields.prompt) basis["prompt_digest"] = pc::sha256_hex(*fields.prompt);
  return Json{{"id", "wrk_" + keyed_hex(key, kWorkRefDomain, pc::dump(basis))}, {"event", event}};
}

std::string open_token(std::string_view value) {
  if (value.empty() || value.size() > 32) return "other";
  for (const char c : value) {
    if (!(is_word_byte(c) || c == '_' || c == '-')) return "other";
  }
  return std::string(value);
}

}  // namespace ctx::host_adapters
