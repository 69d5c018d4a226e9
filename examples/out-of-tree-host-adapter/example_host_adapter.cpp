// Example out-of-tree host-adapter plugin "example-host": the adapter of an imaginary coding host
// whose hooks write Claude-Code-shaped JSON on stdin ({"hook_event_name", "session_id", "cwd",
// "prompt"?, ...}) and read {"message": TEXT} back. It follows the host-adapter contract of
// ctx/conformance/conformance.hpp:
//   config             {"installation_key": "<64 hex>"} (the host's 32-byte key)
//   parse_hook         -> {"kind", "event", "adapter", "scope", "signals", "work_ref", "context"};
//   no
//                         prompt text leaves it: signals are the prompt's [a-z0-9] words, scope ids
//                         and the work reference are HMAC-SHA256 under the installation key
//   render_reply       {"actions": [...]} -> {"message": "ctx recommends: ..."} or {}
//   install_locations  {"skills": ".example-host/skills"}
// The whole plugin is the class ExampleHost and the CTX_PLUGIN line at the end.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ctx/sdk/plugin.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

namespace {

using Json = nlohmann::json;

constexpr std::string_view kId = "example-host";
constexpr std::size_t kMaxPayloadBytes = std::size_t{1} << 20;

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (std::size_t i = 0; i < size; ++i) {
    hex += kHex[bytes[i] >> 4];
    hex += kHex[bytes[i] & 0xf];
  }
  return hex;
}

// HMAC-SHA256(key, domain || 0 || text) in hex.
std::string keyed_hex(const std::string& key, std::string_view domain, std::string_view text) {
  std::string input(domain);
  input += '\0';
  input += text;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac,
           &size) == nullptr) {
    throw ctx::Error("hmac-sha256 failed", ctx::ErrorCode::kInternal);
  }
  return to_hex(mac, size);
}

std::string key_from_hex(const std::string& hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string key;
  for (std::size_t i = 0; hex.size() == 64 && i < hex.size(); i += 2) {
    const int high = nibble(hex[i]);
    const int low = nibble(hex[i + 1]);
    if (high < 0 || low < 0) break;
    key += static_cast<char>(high * 16 + low);
  }
  if (key.size() != 32) throw ctx::InvalidArgument("installation_key must be 64 lower-case hex");
  return key;
}

Json parse_object(std::string_view text, const char* what) {
  if (text.size() > kMaxPayloadBytes) {
    throw ctx::InvalidArgument(std::string(what) + " is larger than 1 MiB");
  }
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) throw ctx::InvalidArgument(std::string(what) + " is not a json object");
  return value;
}

std::string string_member(const Json& object, const char* key, bool required) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) throw ctx::InvalidArgument(std::string("hook payload needs ") + key);
    return "";
  }
  if (!it->is_string()) throw ctx::InvalidArgument(std::string(key) + " must be a string");
  return it->get<std::string>();
}

// The lower-cased [a-z0-9] runs of `text`, 2 to 64 characters long.
std::set<std::string> words(std::string_view text) {
  std::set<std::string> out;
  std::string word;
  auto flush = [&] {
    if (word.size() >= 2 && word.size() <= 64) out.insert(word);
    word.clear();
  };
  for (const char raw : text) {
    const char c = (raw >= 'A' && raw <= 'Z') ? static_cast<char>(raw - 'A' + 'a') : raw;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      word += c;
    } else {
      flush();
    }
  }
  flush();
  return out;
}

class ExampleHost final : public ctx::sdk::HostAdapter {
 public:
  explicit ExampleHost(std::string_view config_json) {
    const Json config = parse_object(config_json.empty() ? "{}" : config_json, "config");
    for (const auto& [name, value] : config.items()) {
      if (name != "installation_key" || !value.is_string()) {
        throw ctx::InvalidArgument("config takes only a string installation_key");
      }
      key_ = key_from_hex(value.get<std::string>());
    }
  }

  std::string parse_hook(std::string_view payload_json) override {
    if (key_.empty()) {
      throw ctx::Error("example-host has no installation_key", ctx::ErrorCode::kFailedPrecondition);
    }
    const Json payload = parse_object(payload_json, "hook payload");
    const std::string event = string_member(payload, "hook_event_name", true);
    const std::string session = string_member(payload, "session_id", true);
    const std::string cwd = string_member(payload, "cwd", false);
    const std::string prompt = string_member(payload, "prompt", false);
    const std::string workspace = "ws-" + keyed_hex(key_, "example.workspace", cwd).substr(0, 32);
    const Json scope = {
        {"tenant_id", "local"},
        {"workspace_id", workspace},
        {"repository_id", workspace},
        {"session_id", "ses-" + keyed_hex(key_, "example.session", session).substr(0, 32)},
        {"exposure_id", kId},
        {"host_context_id", kId}};
    const std::set<std::string> signals = words(prompt);
    const std::string work = event + '\0' + session + '\0' + prompt;
    const bool prompt_event = event == "UserPromptSubmit";
    return Json{{"kind", prompt_event ? "prompt" : "ignored"},
                {"event", prompt_event ? event : "ignored"},
                {"adapter", kId},
                {"scope", scope},
                {"signals", Json(signals)},
                {"work_ref", {{"id", "wrk_" + keyed_hex(key_, "example.work-ref", work)}}},
                {"context", Json::object()}}
        .dump();
  }

  std::string render_reply(std::string_view request_json) override {
    const Json request = parse_object(request_json, "reply request");
    const auto actions = request.find("actions");
    if (actions == request.end() || !actions->is_array()) {
      throw ctx::InvalidArgument("reply request needs an actions array");
    }
    std::string names;
    for (const Json& action : *actions) {
      if (!action.is_object()) throw ctx::InvalidArgument("an action must be an object");
      for (const char* key : {"capability_id", "entity_id"}) {
        const auto it = action.find(key);
        if (it != action.end() && it->is_string()) {
          names += (names.empty() ? "" : ", ") + it->get<std::string>();
          break;
        }
      }
    }
    return names.empty() ? "{}" : Json{{"message", "ctx recommends: " + names + "."}}.dump();
  }

  std::string install_locations() override {
    return Json{{"skills", ".example-host/skills"}}.dump();
  }

 private:
  std::string key_;
};

}  // namespace

CTX_PLUGIN(ExampleHost, host_adapter, "example-host", "1.0.0");
