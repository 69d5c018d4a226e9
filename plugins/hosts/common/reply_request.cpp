#include "plugins/hosts/common/reply_request.hpp"

#include <algorithm>
#include <ctx/sdk/error.hpp>

#include "plugins/common/bytes.hpp"
#include "plugins/hosts/common/hook_input.hpp"

namespace ctx::host_adapters {
namespace {

constexpr std::size_t kMaxCapabilityChars = 128;
constexpr std::size_t kMaxKindChars = 64;
constexpr std::string_view kOmitted = "ctx: further lines omitted.";

bool is_lower_alnum(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9][a-z0-9._:@-]{0,127}
bool is_capability_id(std::string_view text) noexcept {
  if (text.empty() || text.size() > kMaxCapabilityChars || !is_lower_alnum(text.front())) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [](char c) {
    return is_lower_alnum(c) || c == '.' || c == '_' || c == ':' || c == '@' || c == '-';
  });
}

// [A-Za-z][A-Za-z0-9]{0,63}: action kinds and event names.
bool is_name(std::string_view text) noexcept {
  if (text.empty() || text.size() > kMaxKindChars) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// YYYY-MM-DDTHH:MM:SS, an optional fraction of 1-9 digits, Z: digits and fixed punctuation only.
bool is_utc_timestamp(std::string_view text) noexcept {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd";
  if (text.size() < kShape.size() + 1 || text.back() != 'Z') return false;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    if (kShape[i] == 'd' ? !digit(text[i]) : text[i] != kShape[i]) return false;
  }
  const std::string_view rest = text.substr(kShape.size(), text.size() - kShape.size() - 1);
  if (rest.empty()) return true;
  if (rest.size() < 2 || rest.size() > 10 || rest.front() != '.') return false;
  return std::all_of(rest.begin() + 1, rest.end(), digit);
}

void add_unique(std::vector<std::string>& list, std::string value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(std::move(value));
}

// The capability an object names ("capability_id", else "entity_id"), or nullopt.
std::optional<std::string> named_capability(const Json& object, std::string_view what) {
  for (const char* key : {"capability_id", "entity_id"}) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) continue;
    if (!it->is_string() || !is_capability_id(it->get_ref<const std::string&>())) {
      throw InvalidArgument("reply request " + std::string(what) + " " + key +
                            " is not a capability id");
    }
    return it->get<std::string>();
  }
  return std::nullopt;
}

bool recommends(std::string_view kind) noexcept {
  return kind != "DeactivateCapability" && kind != "UninstallCapability" && kind != "Notify" &&
         kind != "NoChange";
}

ConsentChallenge read_challenge(const Json& value) {
  if (!value.is_object()) throw InvalidArgument("reply request challenge must be an object");
  const auto digest = value.find("challenge_digest");
  if (digest == value.end() || !digest->is_string() ||
      !plugin_common::is_sha256_hex(digest->get_ref<const std::string&>())) {
    throw InvalidArgument("reply request challenge needs a challenge_digest of 64 hex characters");
  }
  ConsentChallenge challenge;
  challenge.digest = digest->get<std::string>();
  challenge.capability_id = named_capability(value, "challenge").value_or("");
  return challenge;
}

std::string listed(const std::vector<std::string>& ids) {
  std::string text;
  const std::size_t shown = std::min(ids.size(), kMaxListed);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0) text += ", ";
    text += display_capability(ids[i]);
  }
  if (ids.size() > shown) text += " and " + std::to_string(ids.size() - shown) + " more";
  return text;
}

constexpr std::size_t kMaxStateDirBytes = 4096;

// An absolute path of bounded size without control characters.
bool is_printable_state_dir(std::string_view path) noexcept {
  if (path.empty() || path.size() > kMaxStateDirBytes || path.front() != '/') return false;
  return std::none_of(path.begin(), path.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

// `text` as one POSIX shell word: bare when it holds only characters no shell treats
// specially, else in single quotes (a ' inside as '\'').
std::string shell_word(std::string_view text) {
  const bool bare = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '.' || c == '_' || c == '-' || c == '+' || c == ',' || c == ':' || c == '@' ||
           c == '%' || c == '=';
  });
  if (bare && !text.empty()) return std::string(text);
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string state_argument(const std::optional<std::string>& state_dir) {
  return state_dir ? " --state " + shell_word(*state_dir) : std::string();
}

std::string consent_command(std::string_view verb, std::string_view digest,
                            const std::optional<std::string>& state_dir) {
  return "ctx consent " + std::string(verb) + " " + std::string(digest) + " --key FILE" +
         state_argument(state_dir);
}

ReplyRequest read_reply_request(std::string_view text) {
  const Json request = read_json_object(text, "reply request");
  ReplyRequest out;
  if (const auto event = request.find("event"); event != request.end() && !event->is_null()) {
    if (!event->is_string() || !is_name(event->get_ref<const std::string&>())) {
      throw InvalidArgument("reply request event must be an event name");
    }
    out.event = event->get<std::string>();
  }
  const auto actions = request.find("actions");
  if (actions == request.end() || !actions->is_array()) {
    throw InvalidArgument("reply request needs an array \"actions\"");
  }
  for (const Json& action : *actions) {
    if (!action.is_object()) throw InvalidArgument("reply request actions must be objects");
    const auto kind = action.find("kind");
    if (kind == action.end() || !kind->is_string() ||
        !is_name(kind->get_ref<const std::string&>())) {
      throw InvalidArgument("reply request action needs a string kind");
    }
    if (!recommends(kind->get_ref<const std::string&>())) continue;
    if (const auto capability = named_capability(action, "action")) {
      add_unique(out.recommended, *capability);
    }
    const auto payload = action.find("payload");
    if (kind->get_ref<const std::string&>() != "PresentBundle" || payload == action.end() ||
        !payload->is_object()) {
      continue;
    }
    if (const auto rows = payload->find("capabilities"); rows != payload->end()) {
      if (!rows->is_array()) throw InvalidArgument("reply request bundle rows must be an array");
      for (const Json& row : *rows) {
        if (!row.is_object()) throw InvalidArgument("reply request bundle rows must be objects");
        if (const auto capability = named_capability(row, "bundle row")) {
          add_unique(out.recommended, *capability);
        }
      }
    }
  }
  if (const auto one = request.find("challenge"); one != request.end() && !one->is_null()) {
    out.challenges.push_back(read_challenge(*one));
  }
  if (const auto many = request.find("challenges"); many != request.end() && !many->is_null()) {
    if (!many->is_array()) throw InvalidArgument("reply request challenges must be an array");
    for (const Json& value : *many) out.challenges.push_back(read_challenge(value));
  }
  for (auto [key, list] : {std::pair{"installed", &out.installed},
                           std::pair{"deactivated", &out.deactivated}}) {
    const auto ids = request.find(key);
    if (ids == request.end() || ids->is_null()) continue;
    if (!ids->is_array()) {
      throw InvalidArgument(std::string("reply request ") + key + " must be an array");
    }
    for (const Json& id : *ids) {
      if (!id.is_string() || !is_capability_id(id.get_ref<const std::string&>())) {
        throw InvalidArgument(std::string("reply request ") + key +
                              " entries must be capability ids");
      }
      add_unique(*list, id.get<std::string>());
    }
  }
  if (const auto state_dir = request.find("state_dir");
      state_dir != request.end() && !state_dir->is_null()) {
    if (!state_dir->is_string() ||
        !is_printable_state_dir(state_dir->get_ref<const std::string&>())) {
      throw InvalidArgument(
          "reply request state_dir must be an absolute path without control characters");
    }
    out.state_dir = state_dir->get<std::string>();
  }
  if (const auto stranded = request.find("stranded");
      stranded != request.end() && !stranded->is_null()) {
    if (!stranded->is_array()) throw InvalidArgument("reply request stranded must be an array");
    for (const Json& value : *stranded) {
      if (!value.is_object()) throw InvalidArgument("reply request stranded entries must be objects");
      const auto capability = named_capability(value, "stranded");
      const auto expires = value.find("expires_at");
      if (!capability || expires == value.end() || !expires->is_string() ||
          !is_utc_timestamp(expires->get_ref<const std::string&>())) {
        throw InvalidArgument(
            "reply request stranded entries need a capability_id and a UTC expires_at");
      }
      out.stranded.push_back({*capability, expires->get<std::string>()});
    }
  }
  return out;
}

std::string display_capability(std::string_view capability_id) {
  const auto colon = capability_id.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == capability_id.size()) {
    return std::string(capability_id);
  }
  return std::string(capability_id.substr(colon + 1)) + " (" +
         std::string(capability_id.substr(0, colon)) + ")";
}

std::string reply_text(const ReplyRequest& request) {
  std::vector<std::string> lines;
  if (!request.recommended.empty()) {
    lines.push_back("ctx recommends: " + listed(request.recommended) + ".");
  }
  const std::size_t shown = std::min(request.challenges.size(), kMaxListed);
  for (std::size_t i = 0; i < shown; ++i) {
    const ConsentChallenge& challenge = request.challenges[i];
    const std::string what = challenge.capability_id.empty()
                                 ? std::string("a capability")
                                 : display_capability(challenge.capability_id);
    lines.push_back(
        "ctx needs the user's consent to install " + what +
        ". The user approves it in their own terminal with: " +
        consent_command("approve", challenge.digest, request.state_dir) +
        " (or declines it with: " + consent_command("deny", challenge.digest, request.state_dir) +
        "), where FILE is the user's own signing key. Do not run these "
        "commands for the user.");
  }
  if (request.challenges.size() > shown) {
    lines.push_back("ctx has " + std::to_string(request.challenges.size() - shown) +
                    " more consent requests: see ctx consent show" +
                    state_argument(request.state_dir) + ".");
  }
  if (!request.installed.empty()) {
    lines.push_back("ctx installed: " + listed(request.installed) + ".");
  }
  if (!request.deactivated.empty()) {
    lines.push_back("ctx deactivated: " + listed(request.deactivated) + ".");
  }
  for (std::size_t i = 0; i < std::min(request.stranded.size(), kMaxListed); ++i) {
    const StrandedConsent& stranded = request.stranded[i];
    lines.push_back("ctx cannot ask for approval of " + display_capability(stranded.capability_id) +
                    " now: it was requested under an install policy that has since changed. ctx "
                    "plans again once that request lapses at " +
                    stranded.expires_at + ", or at once if the policy is set back.");
  }
  std::string text;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t room_needed =
        text.size() + lines[i].size() + 1 + (i + 1 < lines.size() ? kOmitted.size() + 1 : 0);
    if (room_needed > kMaxContextChars) {
      text += kOmitted;
      text += '\n';
      break;
    }
    text += lines[i];
    text += '\n';
  }
  if (!text.empty()) text.pop_back();  // no trailing newline
  return text;
}

}  // namespace ctx::host_adapters
