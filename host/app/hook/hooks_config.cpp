#include "host/app/hook/hooks_config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctx/support/fs.hpp>
#include <ctx/support/strict_json.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>

namespace ctx::runtime::hooks {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr std::string_view kBackupSuffix = ".ctx-backup";
constexpr std::uintmax_t kMaxConfigBytes = 16u << 20;

// ---- reading ---------------------------------------------------------------------------------

// Parses `text` as one JSON object, refusing duplicate keys (nlohmann would keep one silently).
Json parse_config(const std::string& text, const fs::path& file) {
  Json value;
  const auto failure = support::read_strict_json(text, &value, core::kMaxJsonDepth);
  const std::string name = file.string();
  if (failure && failure->fault == support::JsonFault::kDuplicateKey) {
    throw MalformedHooksConfig(name + " has a duplicate key; left unchanged");
  }
  if (failure && failure->fault == support::JsonFault::kTooDeep) {
    throw MalformedHooksConfig(name + " is nested too deeply; left unchanged");
  }
  if (failure) throw MalformedHooksConfig(name + " is not valid JSON; left unchanged");
  if (!value.is_object()) {
    throw MalformedHooksConfig(name + " is not a JSON object; left unchanged");
  }
  if (const auto hooks = value.find("hooks"); hooks != value.end()) {
    if (!hooks->is_object()) {
      throw MalformedHooksConfig(name + ": \"hooks\" is not an object; left unchanged");
    }
    for (const auto& [event, groups] : hooks->items()) {
      if (!groups.is_array()) {
        throw MalformedHooksConfig(name + ": hooks." + event + " is not an array; left unchanged");
      }
    }
  }
  return value;
}

// The file's bytes, or nullopt when it does not exist. Errors: MalformedHooksConfig when it is
// not a regular file; SystemError when it cannot be read.
std::optional<std::string> read_file(const fs::path& file) {
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  if (ec || status.type() == fs::file_type::not_found) {
    if (status.type() == fs::file_type::not_found) return std::nullopt;
    throw SystemError("cannot stat " + file.string() + ": " + ec.message());
  }
  if (status.type() != fs::file_type::regular) {
    throw MalformedHooksConfig(file.string() + " is not a regular file; left unchanged");
  }
  if (fs::file_size(file, ec) > kMaxConfigBytes) {
    throw MalformedHooksConfig(file.string() + " is larger than 16 MiB; left unchanged");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SystemError("cannot read " + file.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw SystemError("cannot read " + file.string());
  return bytes.str();
}

// The file to edit: the end of a chain of symlinks (so dotfile managers keep every link; a
// dangling chain ends at the path the file is to be created at), else `file`.
fs::path resolved(const fs::path& file) {
  fs::path current = file;
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's own limit (ELOOP)
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(current, ec))) return current;
    const fs::path target = fs::read_symlink(current, ec);
    if (ec) throw SystemError("cannot read the link " + current.string() + ": " + ec.message());
    current = target.is_absolute() ? target : current.parent_path() / target;
  }
  throw SystemError("too many levels of symbolic links from " + file.string());
}

// ---- writing ---------------------------------------------------------------------------------

// Best effort: the hooks file itself was fsynced; a directory that cannot be synced is not
// reported.
void sync_dir_best_effort(core::StateFs& state_fs, const fs::path& dir) {
  try {
    state_fs.sync_dir(dir, support::Follow::kSymlinks);
  } catch (const core::StateFsError&) {
  }
}

// Replaces `file` with `bytes` atomically (core::replace_file through `state_fs`: the stage
// "<name>.ctx-tmp-<pid>" beside it), with permission bits `mode` (nullopt: 0644 less the process
// umask, for a file that did not exist). Errors: core::StateFsError ("cannot create <stage>: ...",
// "cannot write <file>: ..."); the directory fsync is best effort.
void write_atomically(core::StateFs& state_fs, const fs::path& file, const std::string& bytes,
                      std::optional<mode_t> mode) {
  const fs::path temp =
      file.parent_path() / (file.filename().string() + ".ctx-tmp-" + std::to_string(::getpid()));
  state_fs.remove(temp);  // what a process of this pid left
  const core::NewFile how = mode ? core::NewFile{*mode, /*umask=*/false, /*sync=*/true}
                                 : core::NewFile{0644, /*umask=*/true, /*sync=*/true};
  try {
    core::replace_file(state_fs, file, temp, bytes, how, support::Follow::kSymlinks);
  } catch (const core::StateFsError& error) {
    if (error.step() == core::StateFsStep::kSyncDir) return;  // renamed: best effort
    if (error.step() == core::StateFsStep::kCreate) {
      throw core::StateFsError(
          error, "cannot create " + temp.string() + ": " + std::strerror(error.error()));
    }
    throw core::StateFsError(error,
                             "cannot write " + file.string() + ": " + std::strerror(error.error()));
  }
}

std::optional<mode_t> mode_of(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return st.st_mode & 07777;
}

fs::path backup_path(const fs::path& file) {
  return file.parent_path() / (file.filename().string() + std::string(kBackupSuffix));
}

std::string render(const Json& document) { return document.dump(2) + "\n"; }

// ---- recognising ctx handlers ------------------------------------------------------------------

bool is_plain_word_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == '-' || c == '+' || c == ',' || c == ':' || c == '@' ||
         c == '=';
}

std::string shell_word(const std::string& word) {
  if (!word.empty() &&
      std::all_of(word.begin(), word.end(), [](char c) { return is_plain_word_char(c); })) {
    return word;
  }
  std::string quoted = "'";
  for (const char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// Splits a command line into words: blanks separate; single and double quotes group; a
// backslash escapes the next character outside single quotes. Enough to read back what
// shell_word writes and what a user would type by hand.
std::vector<std::string> shell_words(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < line.size()) {
        word += line[++i];
      } else {
        word += c;
      }
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

bool is_ctx_handler(const Json& handler, HookHost host) {
  if (!handler.is_object()) return false;
  const auto type = handler.find("type");
  const auto command = handler.find("command");
  if (type == handler.end() || *type != "command" || command == handler.end() ||
      !command->is_string()) {
    return false;
  }
  return is_ctx_hook_command(command->get_ref<const std::string&>(), host);
}

int timeout_seconds(std::string_view event) {
  return event == "UserPromptSubmit" || event == "SessionStart" ? 30 : 10;
}

Json desired_group(std::string_view event, const std::string& command_line) {
  Json handler;
  handler["type"] = "command";
  handler["command"] = command_line;
  handler["timeout"] = timeout_seconds(event);
  Json group;
  group["hooks"] = Json::array({handler});
  return group;
}

// Removes ctx handlers of `host` from `document`, except that in each event of `keep` one group
// equal to keep[event] is left in place (and the event is then recorded in `kept`). Groups, event
// arrays and the "hooks" object that held ctx handlers and end up empty are removed too.
// Returns the events that lost a handler.
std::vector<std::string> remove_ctx_handlers(Json& document, HookHost host,
                                             const std::map<std::string, Json>& keep,
                                             std::set<std::string>& kept) {
  std::vector<std::string> touched;
  const auto hooks = document.find("hooks");
  if (hooks == document.end()) return touched;
  std::vector<std::string> emptied_events;
  for (auto& [event, groups] : hooks->items()) {
    bool removed_here = false;
    Json remaining = Json::array();
    for (Json& group : groups) {
      const auto want = keep.find(event);
      if (want != keep.end() && kept.count(event) == 0 && group == want->second) {
        kept.insert(event);
        remaining.push_back(group);
        continue;
      }
      const auto handlers = group.is_object() ? group.find("hooks") : group.end();
      if (!group.is_object() || handlers == group.end() || !handlers->is_array()) {
        remaining.push_back(group);  // not ours to judge
        continue;
      }
      Json others = Json::array();
      for (const Json& handler : *handlers) {
        if (is_ctx_handler(handler, host)) {
          removed_here = true;
        } else {
          others.push_back(handler);
        }
      }
      if (others.size() == handlers->size()) {
        remaining.push_back(group);
      } else if (!others.empty()) {
        *handlers = others;
        remaining.push_back(group);
      }
    }
    if (!removed_here) continue;
    touched.push_back(event);
    groups = remaining;
    if (groups.empty()) emptied_events.push_back(event);
  }
  for (const std::string& event : emptied_events) hooks->erase(event);
  if (!touched.empty() && hooks->empty()) document.erase("hooks");
  return touched;
}

// Saves `previous` (empty: there was no file) as the backup, then writes `document`.
void replace(core::StateFs& state_fs, const fs::path& file,
             const std::optional<std::string>& previous, const std::string& bytes,
             std::optional<fs::path>& backup) {
  const std::optional<mode_t> mode = mode_of(file);
  const fs::path saved = backup_path(file);
  write_atomically(state_fs, saved, previous.value_or(""), 0600);
  backup = saved;
  write_atomically(state_fs, file, bytes, mode);
}

}  // namespace

std::string_view host_name(HookHost host) noexcept { return kHookHostStrings.to_string(host); }

std::optional<HookHost> parse_host(std::string_view name) noexcept {
  return kHookHostStrings.find(name);
}

const std::vector<std::string>& installed_events(HookHost host) {
  static const std::vector<std::string> kClaude = {
      "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
      "Stop",         "SubagentStop",     "PreCompact", "SessionEnd"};
  static const std::vector<std::string> kCodex = {
      "SessionStart", "UserPromptSubmit", "PreToolUse",  "PostToolUse", "Stop",
      "SubagentStop", "PreCompact",       "PostCompact", "SessionEnd"};
  return host == HookHost::kClaudeCode ? kClaude : kCodex;
}

bool is_ctx_hook_command(std::string_view command, HookHost host) {
  const std::vector<std::string> words = shell_words(command);
  return words.size() >= 3 && fs::path(words[0]).filename() == "ctx" && words[1] == "hook" &&
         parse_host(words[2]) == host;
}

std::string snake_event(std::string_view event) {
  std::string snake;
  for (const char c : event) {
    if (c >= 'A' && c <= 'Z') {
      if (!snake.empty()) snake += '_';
      snake += static_cast<char>(c - 'A' + 'a');
    } else {
      snake += c;
    }
  }
  return snake;
}

InstalledHooks read_installed_hooks(const HookTarget& target) {
  InstalledHooks installed;
  installed.file = resolved(target.file);
  const std::optional<std::string> bytes = read_file(installed.file);
  const Json document = bytes ? parse_config(*bytes, installed.file) : Json::object();
  if (const auto hooks = document.find("hooks"); hooks != document.end()) {
    for (const auto& [event, groups] : hooks->items()) {
      bool found = false;
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const Json& group = groups[g];
        const auto handlers = group.is_object() ? group.find("hooks") : group.end();
        if (handlers == group.end() || !handlers->is_array()) continue;
        for (std::size_t h = 0; h < handlers->size(); ++h) {
          const Json& handler = (*handlers)[h];
          if (!is_ctx_handler(handler, target.host)) continue;
          found = true;
          installed.trust_keys.push_back(target.file.string() + ":" + snake_event(event) + ":" +
                                         std::to_string(g) + ":" + std::to_string(h));
          if (installed.state_dir) continue;
          const std::vector<std::string> words =
              shell_words(handler.at("command").get_ref<const std::string&>());
          for (std::size_t i = 3; i + 1 < words.size(); ++i) {
            if (words[i] == "--state") installed.state_dir = fs::path(words[i + 1]);
          }
        }
      }
      if (found) installed.events.push_back(event);
    }
  }
  for (const std::string& event : installed_events(target.host)) {
    if (std::find(installed.events.begin(), installed.events.end(), event) ==
        installed.events.end()) {
      installed.missing.push_back(event);
    }
  }
  return installed;
}

HookTarget hook_target(HookHost host, HookScope scope, const fs::path& home,
                       const fs::path& project_dir, const std::optional<fs::path>& codex_home,
                       const std::optional<fs::path>& claude_config_dir) {
  if (host == HookHost::kCodex && scope == HookScope::kUser && codex_home &&
      codex_home->is_absolute()) {
    return HookTarget{host, *codex_home / "hooks.json"};
  }
  if (host == HookHost::kClaudeCode && scope == HookScope::kUser && claude_config_dir &&
      claude_config_dir->is_absolute()) {
    return HookTarget{host, *claude_config_dir / "settings.json"};
  }
  const fs::path& root = scope == HookScope::kUser ? home : project_dir;
  if (root.empty() || !root.is_absolute()) {
    throw InvalidArgument(scope == HookScope::kUser ? "the home directory must be absolute"
                                                    : "the project directory must be absolute");
  }
  HookTarget target;
  target.host = host;
  target.file = host == HookHost::kClaudeCode ? root / ".claude" / "settings.json"
                                              : root / ".codex" / "hooks.json";
  return target;
}

std::string hook_command_line(HookHost host, const HookCommand& command) {
  if (!command.executable.is_absolute() || command.executable.filename() != "ctx") {
    throw InvalidArgument("the hook command needs the absolute path of a ctx executable");
  }
  std::string line =
      shell_word(command.executable.string()) + " hook " + std::string(host_name(host));
  if (command.state_dir) {
    if (!command.state_dir->is_absolute()) {
      throw InvalidArgument("the hook command's --state directory must be absolute");
    }
    line += " --state " + shell_word(command.state_dir->string());
  }
  return line;
}

HooksChange install_hooks(const HookTarget& target, const HookCommand& command,
                          core::StateFs& state_fs) {
  const std::string line = hook_command_line(target.host, command);
  HooksChange change;
  change.file = resolved(target.file);
  const std::optional<std::string> previous = read_file(change.file);
  const Json original = previous ? parse_config(*previous, change.file) : Json::object();

  std::map<std::string, Json> keep;
  for (const std::string& event : installed_events(target.host)) {
    keep[event] = desired_group(event, line);
  }
  Json document = original;
  std::set<std::string> kept;
  remove_ctx_handlers(document, target.host, keep, kept);
  for (const std::string& event : installed_events(target.host)) {
    if (kept.count(event) != 0) continue;
    document["hooks"][event].push_back(keep[event]);
    change.events.push_back(event);
  }

  if (target.host == HookHost::kCodex) {
    change.notice =
        "Codex runs new hooks only after you review and trust them: open /hooks in Codex "
        "(Codex before 0.125 also needs [features] codex_hooks = true in config.toml).";
  } else {
    change.notice =
        "Claude Code runs them once the folder is trusted; /hooks in Claude Code lists them.";
  }
  if (const auto disabled = document.find("disableAllHooks");
      disabled != document.end() && *disabled == true) {
    change.notice += " Note: disableAllHooks is true in this file, so no hook runs.";
  }
  if (document == original && previous) return change;  // already installed: nothing written
  change.changed = true;
  change.created = !previous;
  fs::create_directories(change.file.parent_path());
  replace(state_fs, change.file, previous, render(document), change.backup);
  return change;
}

HooksChange uninstall_hooks(const HookTarget& target, core::StateFs& state_fs) {
  HooksChange change;
  change.file = resolved(target.file);
  const std::optional<std::string> previous = read_file(change.file);
  if (!previous) return change;
  Json document = parse_config(*previous, change.file);
  std::set<std::string> kept;
  change.events = remove_ctx_handlers(document, target.host, {}, kept);
  if (change.events.empty()) return change;
  change.changed = true;

  // The content saved before the last change, when it is what removing ctx's handlers gives,
  // is written back byte for byte; an empty backup means ctx created the file.
  const fs::path saved = backup_path(change.file);
  std::optional<std::string> before;
  try {
    before = read_file(saved);
  } catch (const Error&) {
    before.reset();
  }
  if (before && before->empty() && document.empty()) {
    if (::unlink(change.file.c_str()) != 0) {
      throw SystemError("cannot remove " + change.file.string() + ": " + std::strerror(errno));
    }
    ::unlink(saved.c_str());
    sync_dir_best_effort(state_fs, change.file.parent_path());
    change.restored = true;
    return change;
  }
  if (before && !before->empty()) {
    bool same = false;
    try {
      same = parse_config(*before, saved) == document;
    } catch (const MalformedHooksConfig&) {
      // an unreadable backup is only not used
    }
    if (same) {
      write_atomically(state_fs, change.file, *before, mode_of(change.file));
      ::unlink(saved.c_str());
      sync_dir_best_effort(state_fs, change.file.parent_path());
      change.restored = true;
      return change;
    }
  }
  // Not what it was before install (edited since): the result, and the bytes it replaces in
  // the backup.
  replace(state_fs, change.file, previous, render(document), change.backup);
  return change;
}

}  // namespace ctx::runtime::hooks

// ---- Codex's hook trust in config.toml ---------------------------------------------------------

namespace ctx::runtime::hooks {
namespace {

// Parses `text` as TOML. Errors: MalformedHooksConfig naming the file and the position.
toml::table parse_toml(const std::string& text, const fs::path& file) {
  try {
    return toml::parse(text, file.string());
  } catch (const toml::parse_error& error) {
    const auto& begin = error.source().begin;
    throw MalformedHooksConfig(file.string() + " is not valid TOML (line " +
                               std::to_string(begin.line) + "); left unchanged");
  }
}

// The hooks.state table's keys and trusted hashes of a parsed config.toml.
std::map<std::string, std::string> trust_entries(const toml::table& config) {
  std::map<std::string, std::string> entries;
  const toml::table* state = config["hooks"]["state"].as_table();
  if (state == nullptr) return entries;
  for (const auto& [key, value] : *state) {
    const toml::table* entry = value.as_table();
    const auto hash = entry != nullptr ? (*entry)["trusted_hash"].value<std::string>()
                                       : std::optional<std::string>();
    entries[std::string(key.str())] = hash.value_or("");
  }
  return entries;
}

// `config` without an empty hooks.state table (and a "hooks" table that only held it).
toml::table without_empty_state(toml::table config) {
  if (toml::table* hooks = config["hooks"].as_table()) {
    if (const toml::table* state = (*hooks)["state"].as_table(); state && state->empty()) {
      hooks->erase("state");
    }
    if (hooks->empty()) config.erase("hooks");
  }
  return config;
}

std::string_view trim_left(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line;
}

// Reads a TOML basic ("...") or literal ('...') string key at the start of `rest`; advances it.
std::optional<std::string> read_quoted_key(std::string_view& rest) {
  if (rest.empty() || (rest.front() != '"' && rest.front() != '\'')) return std::nullopt;
  const char quote = rest.front();
  std::string key;
  std::size_t i = 1;
  for (; i < rest.size() && rest[i] != quote; ++i) {
    if (quote == '"' && rest[i] == '\\') {
      if (++i >= rest.size()) return std::nullopt;
      switch (rest[i]) {
        case '"':
          key += '"';
          break;
        case '\\':
          key += '\\';
          break;
        case 'n':
          key += '\n';
          break;
        case 't':
          key += '\t';
          break;
        default:
          return std::nullopt;  // \uXXXX and the rest: not a key ctx wrote
      }
    } else {
      key += rest[i];
    }
  }
  if (i >= rest.size()) return std::nullopt;
  rest.remove_prefix(i + 1);
  return key;
}

// Skips blanks then `word` at the start of `rest`.
bool consume(std::string_view& rest, std::string_view word) {
  rest = trim_left(rest);
  if (rest.substr(0, word.size()) != word) return false;
  rest.remove_prefix(word.size());
  return true;
}

// A table header line "[hooks.state]" (key "") or "[hooks.state."KEY"]" (KEY); nullopt for any
// other line.
std::optional<std::string> state_header(std::string_view line) {
  std::string_view rest = trim_left(line);
  if (rest.substr(0, 2) == "[[" || !consume(rest, "[") || !consume(rest, "hooks") ||
      !consume(rest, ".") || !consume(rest, "state")) {
    return std::nullopt;
  }
  std::string key;
  if (consume(rest, ".")) {
    rest = trim_left(rest);
    const auto quoted = read_quoted_key(rest);
    if (!quoted) return std::nullopt;
    key = *quoted;
  }
  if (!consume(rest, "]")) return std::nullopt;
  rest = trim_left(rest);
  if (!rest.empty() && rest.front() != '#' && rest.front() != '\r' && rest.front() != '\n') {
    return std::nullopt;
  }
  return key;
}

bool is_header(std::string_view line) {
  return !trim_left(line).empty() && trim_left(line)[0] == '[';
}

bool is_blank_or_comment(std::string_view line) {
  const std::string_view rest = trim_left(line);
  return rest.empty() || rest[0] == '#' || rest[0] == '\r' || rest[0] == '\n';
}

}  // namespace

CodexConfigFacts read_codex_config(const fs::path& config_toml) {
  CodexConfigFacts facts;
  const std::optional<std::string> text = read_file(config_toml);
  if (!text) return facts;
  const toml::table config = parse_toml(*text, config_toml);
  facts.trusted_hashes = trust_entries(config);
  if (const toml::table* projects = config["projects"].as_table()) {
    for (const auto& [dir, value] : *projects) {
      const toml::table* project = value.as_table();
      if (project != nullptr && (*project)["trust_level"].value<std::string>() == "trusted") {
        facts.trusted_projects.emplace_back(std::string(dir.str()));
      }
    }
  }
  return facts;
}

bool codex_project_trusted(const CodexConfigFacts& facts, const fs::path& project) {
  for (fs::path dir = project.lexically_normal(); !dir.empty(); dir = dir.parent_path()) {
    for (const fs::path& trusted : facts.trusted_projects) {
      if (trusted.lexically_normal() == dir) return true;
    }
    if (dir == dir.root_path()) break;
  }
  return false;
}

void save_codex_config_backup(const fs::path& config_toml, core::StateFs& state_fs) {
  const fs::path file = resolved(config_toml);
  const fs::path saved = backup_path(file);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(saved, ec))) return;
  fs::create_directories(file.parent_path());
  write_atomically(state_fs, saved, read_file(file).value_or(""), 0600);
}

std::string without_trust_tables(std::string_view toml, const std::vector<std::string>& keys) {
  const std::set<std::string> wanted(keys.begin(), keys.end());
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < toml.size();) {
    const std::size_t end = toml.find('\n', at);
    const std::size_t next = end == std::string_view::npos ? toml.size() : end + 1;
    lines.push_back(toml.substr(at, next - at));
    at = next;
  }
  // Pass 1: the keyed tables; pass 2: a bare [hooks.state] header left with nothing under it
  // and no keyed table after it.
  std::vector<bool> drop(lines.size(), false);
  bool keyed_left = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto key = state_header(lines[i]);
    if (!key || key->empty()) continue;
    if (wanted.count(*key) == 0) {
      keyed_left = true;
      continue;
    }
    drop[i] = true;
    for (std::size_t j = i + 1; j < lines.size() && !is_header(lines[j]); ++j) drop[j] = true;
  }
  if (!keyed_left) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const auto key = state_header(lines[i]);
      if (!key || !key->empty()) continue;
      std::size_t j = i + 1;
      while (j < lines.size() && !is_header(lines[j]) && is_blank_or_comment(lines[j])) ++j;
      if (j < lines.size() && !is_header(lines[j])) continue;  // it holds something itself
      for (std::size_t k = i; k < j; ++k) drop[k] = true;
    }
  }
  // A blank line that only separated a dropped table from what came before goes with it.
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (drop[i]) continue;
    const bool blank =
        trim_left(lines[i]).empty() || trim_left(lines[i]) == "\n" || trim_left(lines[i]) == "\r\n";
    if (blank) {
      std::size_t j = i + 1;
      while (j < lines.size() && drop[j]) ++j;
      if (j > i + 1 && j == lines.size()) continue;  // only dropped tables followed: trailing
    }
    out += lines[i];
  }
  return out;
}

TrustRemoval remove_codex_trust(const fs::path& config_toml, const std::vector<std::string>& keys,
                                core::StateFs& state_fs) {
  TrustRemoval removal;
  const fs::path file = resolved(config_toml);
  const fs::path saved = backup_path(file);
  const std::optional<std::string> text = read_file(file);
  if (!text) {
    ::unlink(saved.c_str());
    return removal;
  }
  const toml::table before = parse_toml(*text, file);
  const std::map<std::string, std::string> present = trust_entries(before);
  for (const std::string& key : keys) removal.removed += present.count(key);
  if (removal.removed == 0) return removal;
  std::string result = without_trust_tables(*text, keys);
  const toml::table after = parse_toml(result, file);
  const std::map<std::string, std::string> left = trust_entries(after);
  for (const std::string& key : keys) {
    if (left.count(key) != 0) {
      throw MalformedHooksConfig(file.string() +
                                 ": a ctx hook's trust entry is not a [hooks.state.\"KEY\"] "
                                 "table; left unchanged (remove it with /hooks in Codex)");
    }
  }
  std::optional<std::string> original;
  try {
    original = read_file(saved);
  } catch (const Error&) {
    original.reset();
  }
  if (original) {
    bool same = false;
    try {
      same = without_empty_state(parse_toml(*original, saved)) == without_empty_state(after);
    } catch (const MalformedHooksConfig&) {
      // an unreadable backup is only not used
    }
    if (same) {
      result = *original;
      removal.restored = true;
    }
  }
  if (removal.restored && original->empty()) {
    if (::unlink(file.c_str()) != 0) {
      throw SystemError("cannot remove " + file.string() + ": " + std::strerror(errno));
    }
  } else {
    write_atomically(state_fs, file, result, mode_of(file));
  }
  ::unlink(saved.c_str());
  sync_dir_best_effort(state_fs, file.parent_path());
  removal.changed = true;
  return removal;
}

}  // namespace ctx::runtime::hooks
