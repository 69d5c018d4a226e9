#include "plugins/hosts/generic/core/generic_adapter.hpp"

#include <array>
#include <ctx/sdk/error.hpp>
#include <map>
#include <utility>

#include "plugins/common/bytes.hpp"
#include "plugins/common/json_input.hpp"

namespace ctx::generic_host {
namespace {

namespace pc = ctx::plugin_common;

constexpr std::size_t kMaxIdLength = 256;
constexpr std::size_t kMaxTokenLength = 64;
constexpr std::string_view kWorkspaceDomain = "ctx.generic.workspace\n";

char lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lower(c);
  return out;
}

bool is_alnum_lower(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9][a-z0-9+#._-]{0,63}
bool is_token(std::string_view text) noexcept {
  if (text.empty() || text.size() > kMaxTokenLength || !is_alnum_lower(text.front())) return false;
  for (const char c : text) {
    if (!(is_alnum_lower(c) || c == '+' || c == '#' || c == '.' || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

bool is_word_char(char c) noexcept {
  return is_alnum_lower(lower(c)) || c == '+' || c == '#' || c == '.' || c == '_' || c == '-';
}

// Language of a path: special file names first, then the extension after the last dot.
std::string_view language_for_path(std::string_view path) {
  const auto slash = path.find_last_of('/');
  const std::string base = lowered(slash == std::string_view::npos ? path : path.substr(slash + 1));
  if (base == "dockerfile") return "docker";
  if (base == "cmakelists.txt") return "cmake";
  const auto dot = base.find_last_of('.');
  if (dot == std::string::npos || dot + 1 == base.size()) return {};
  return language_for_extension(std::string_view(base).substr(dot + 1));
}

const std::string& scope_member(const pc::Json& payload, std::string_view key,
                                const std::string& fallback) {
  const auto it = payload.find(key);
  if (it == payload.end()) return fallback;
  if (!it->is_string() || it->get_ref<const std::string&>().empty() ||
      it->get_ref<const std::string&>().size() > kMaxIdLength) {
    throw InvalidArgument("hook payload " + std::string(key) +
                          " must be a string of 1 to 256 bytes");
  }
  return it->get_ref<const std::string&>();
}

class SignalSet {
 public:
  void add(std::string_view token) {
    if (is_token(token)) tokens_.emplace(token);
  }
  void add_path(std::string_view path) { add(language_for_path(path)); }
  void add_prompt(std::string_view prompt) {
    std::size_t i = 0;
    while (i < prompt.size()) {
      while (i < prompt.size() && !is_word_char(prompt[i])) ++i;
      const std::size_t start = i;
      while (i < prompt.size() && is_word_char(prompt[i])) ++i;
      std::string word = lowered(prompt.substr(start, i - start));
      while (!word.empty() && (word.back() == '.' || word.back() == '-' || word.back() == '_')) {
        word.pop_back();
      }
      if (word.empty()) continue;
      if (signal_vocabulary().count(word) != 0) {
        add(word);
      } else if (word.find('.') != std::string::npos) {
        add_path(word);
      }
    }
  }
  pc::Json to_json() const {
    pc::Json out = pc::Json::array();
    for (const std::string& token : tokens_) {
      if (out.size() == kMaxSignals) break;
      out.push_back(token);
    }
    return out;
  }

 private:
  std::set<std::string> tokens_;  // sorted, unique
};

}  // namespace

const std::set<std::string, std::less<>>& signal_vocabulary() {
  static const std::set<std::string, std::less<>> kVocabulary = {
      "android",  "angular",    "ansible",    "api",      "aws",        "azure",      "bash",
      "c#",       "c++",        "cargo",      "cmake",    "css",        "csv",        "django",
      "docker",   "docx",       "elixir",     "fastapi",  "flask",      "gcp",        "git",
      "github",   "golang",     "gradle",     "graphql",  "grpc",       "haskell",    "html",
      "ios",      "java",       "javascript", "jest",     "json",       "kotlin",     "kubernetes",
      "latex",    "linux",      "markdown",   "maven",    "mcp",        "mysql",      "nodejs",
      "npm",      "pdf",        "php",        "postgres", "postgresql", "powershell", "pptx",
      "pytest",   "python",     "react",      "redis",    "ruby",       "rust",       "scala",
      "security", "sql",        "sqlite",     "svelte",   "swift",      "terraform",  "testing",
      "toml",     "typescript", "vue",        "xlsx",     "yaml"};
  return kVocabulary;
}

std::string_view language_for_extension(std::string_view extension) {
  // clang-format off
  static const std::map<std::string, std::string, std::less<>> kLanguages = {
      {"c", "c"},           {"cc", "c++"},        {"cjs", "javascript"}, {"cpp", "c++"},
      {"cs", "c#"},         {"css", "css"},       {"csv", "csv"},        {"cxx", "c++"},
      {"docx", "docx"},     {"ex", "elixir"},     {"exs", "elixir"},     {"go", "golang"},
      {"h", "c"},           {"hh", "c++"},        {"hpp", "c++"},        {"hs", "haskell"},
      {"html", "html"},     {"java", "java"},     {"js", "javascript"},  {"json", "json"},
      {"jsx", "javascript"}, {"kt", "kotlin"},    {"md", "markdown"},    {"mjs", "javascript"},
      {"pdf", "pdf"},       {"php", "php"},       {"pptx", "pptx"},      {"ps1", "powershell"},
      {"py", "python"},     {"rb", "ruby"},       {"rs", "rust"},        {"scala", "scala"},
      {"sh", "bash"},       {"sql", "sql"},       {"svelte", "svelte"},  {"swift", "swift"},
      {"tex", "latex"},     {"tf", "terraform"},  {"toml", "toml"},      {"ts", "typescript"},
      {"tsx", "typescript"}, {"vue", "vue"},      {"xlsx", "xlsx"},      {"yaml", "yaml"},
      {"yml", "yaml"}};
  // clang-format on
  const auto it = kLanguages.find(lowered(extension));
  return it == kLanguages.end() ? std::string_view{} : std::string_view(it->second);
}

GenericAdapter::GenericAdapter(std::string_view config_json) {
  if (config_json.empty()) return;
  const pc::Json config = pc::parse_object(config_json, "generic adapter config");
  for (const auto& [key, value] : config.items()) {
    std::string* member = key == "skills_dir"  ? &skills_dir_
                          : key == "tenant_id" ? &tenant_id_
                                               : nullptr;
    if (member == nullptr) throw InvalidArgument("generic adapter config has an unknown member");
    if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
      throw InvalidArgument("generic adapter config " + key + " must be a non-empty string");
    }
    *member = value.get<std::string>();
  }
}

Json GenericAdapter::parse_hook(std::string_view payload_json) const {
  constexpr std::string_view kWhat = "hook payload";
  const pc::Json payload = pc::parse_object(payload_json, kWhat);
  const std::string& event = pc::require_string(payload, "hook_event_name", kWhat);
  if (event.empty() || event.size() > kMaxIdLength) {
    throw InvalidArgument("hook payload hook_event_name must be a string of 1 to 256 bytes");
  }
  pc::require_string(payload, "session_id", kWhat);
  const std::string& session_id = scope_member(payload, "session_id", event);
  const auto cwd = pc::optional_string(payload, "cwd", kWhat);
  const auto prompt = pc::optional_string(payload, "prompt", kWhat);

  const std::string derived_workspace =
      cwd ? "ws-" + pc::sha256_hex(std::string(kWorkspaceDomain) + *cwd).substr(0, 32)
          : std::string("ws-none");
  const std::string generic = "generic";
  const std::string& workspace_id = scope_member(payload, "workspace_id", derived_workspace);
  const Json scope = {{"tenant_id", scope_member(payload, "tenant_id", tenant_id_)},
                      {"workspace_id", workspace_id},
                      {"repository_id", scope_member(payload, "repository_id", workspace_id)},
                      {"session_id", session_id},
                      {"exposure_id", scope_member(payload, "exposure_id", generic)},
                      {"host_context_id", scope_member(payload, "host_context_id", generic)}};

  SignalSet signals;
  if (const auto explicit_signals = payload.find("signals"); explicit_signals != payload.end()) {
    if (!explicit_signals->is_array())
      throw InvalidArgument("hook payload signals must be an array");
    for (const pc::Json& token : *explicit_signals) {
      if (token.is_string()) signals.add(lowered(token.get_ref<const std::string&>()));
    }
  }
  if (const auto files = payload.find("files"); files != payload.end()) {
    if (!files->is_array()) throw InvalidArgument("hook payload files must be an array");
    for (const pc::Json& path : *files) {
      if (path.is_string()) signals.add_path(path.get_ref<const std::string&>());
    }
  }
  if (const auto input = payload.find("tool_input"); input != payload.end() && input->is_object()) {
    if (const auto path = input->find("file_path"); path != input->end() && path->is_string()) {
      signals.add_path(path->get_ref<const std::string&>());
    }
  }
  if (const auto tool = pc::optional_string(payload, "tool_name", kWhat)) {
    signals.add("tool-" + lowered(*tool));
  }
  if (prompt) signals.add_prompt(*prompt);

  Json work_ref = {{"event", event}, {"session_id", session_id}};
  for (const char* key : {"turn_id", "tool_use_id"}) {
    if (const auto value = pc::optional_string(payload, key, kWhat)) work_ref[key] = *value;
  }
  if (prompt) work_ref["prompt_sha256"] = pc::sha256_hex(*prompt);
  work_ref["id"] = pc::sha256_hex(pc::dump(work_ref));

  return Json{
      {"event", event}, {"scope", scope}, {"signals", signals.to_json()}, {"work_ref", work_ref}};
}

Json GenericAdapter::render_reply(std::string_view actions_json) const {
  constexpr std::string_view kWhat = "reply request";
  const pc::Json request = pc::parse_object(actions_json, kWhat);
  const auto actions = request.find("actions");
  if (actions == request.end() || !actions->is_array()) {
    throw InvalidArgument("reply request needs an array \"actions\"");
  }
  std::string message;
  for (const pc::Json& action : *actions) {
    if (!action.is_object()) throw InvalidArgument("reply request actions must be objects");
    message += "ctx: " + pc::require_string(action, "kind", "reply request action");
    if (const auto capability = pc::optional_string(action, "capability_id", kWhat)) {
      message += " " + *capability;
    }
    message += "\n";
  }
  Json reply = {
      {"schema", kReplySchema}, {"continue", true}, {"actions", *actions}, {"message", message}};
  if (const auto challenge = request.find("challenge");
      challenge != request.end() && !challenge->is_null()) {
    if (!challenge->is_object()) throw InvalidArgument("reply request challenge must be an object");
    reply["challenge"] = *challenge;
  }
  return reply;
}

Json GenericAdapter::install_locations() const { return Json{{"skills", skills_dir_}}; }

}  // namespace ctx::generic_host
