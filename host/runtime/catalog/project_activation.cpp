#include "host/runtime/catalog/project_activation.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <set>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime {
namespace {

using core::Json;
namespace fs = std::filesystem;

constexpr std::size_t kMaxTargetBytes = 16384;
constexpr std::size_t kMaxLifecycleBytes = 65536;
constexpr std::string_view kTargetSchema = "ctx.activation-target-v2";
constexpr std::string_view kLegacyTargetSchema = "ctx.activation-target-v1";
constexpr std::string_view kLifecycleSchema = "ctx.project-lifecycle-v1";
constexpr std::string_view kTargetsDir = "activation-targets";
constexpr std::string_view kLegacyTargetFile = "activation-target.json";

std::string_view scope_name(ActivationScope scope) {
  return scope == ActivationScope::kUser ? "user" : "project";
}

Json target_json(const ActivationTarget& target) {
  Json stored = {{"adapter", target.adapter},
                 {"project_dir", target.project_dir.string()},
                 {"schema", kTargetSchema},
                 {"scope", scope_name(target.scope)},
                 {"skills_dir", target.skills_dir.string()}};
  if (!target.mcp_format.empty()) {
    stored["agents_dir"] = target.agents_dir.string();
    stored["mcp_file"] = target.mcp_file.string();
    stored["mcp_format"] = target.mcp_format;
  }
  return stored;
}

fs::path target_file(const fs::path& state_dir, const ActivationTarget& target) {
  const std::string name = core::canonical_digest(Json{{"adapter", target.adapter},
                                                       {"project_dir", target.project_dir.string()},
                                                       {"scope", scope_name(target.scope)}},
                                                  core::Encoding::kAscii);
  return state_dir / kTargetsDir / (name + ".json");
}

ActivationTarget parse_target(const std::string& bytes, std::string_view schema) {
  try {
    const Json stored = core::parse_json(bytes);
    ActivationTarget target;
    target.adapter = stored.at("adapter").get<std::string>();
    target.project_dir = stored.at("project_dir").get<std::string>();
    target.skills_dir = stored.at("skills_dir").get<std::string>();
    if (schema == kTargetSchema) {
      const std::string scope = stored.at("scope").get<std::string>();
      if (scope != "project" && scope != "user") throw DataLoss("activation target is malformed");
      target.scope = scope == "user" ? ActivationScope::kUser : ActivationScope::kProject;
    }
    if (stored.at("schema") != schema || !target.skills_dir.is_absolute() ||
        !target.project_dir.is_absolute() || target.adapter.empty()) {
      throw DataLoss("activation target is malformed");
    }
    if (stored.contains("mcp_format")) {
      target.agents_dir = stored.at("agents_dir").get<std::string>();
      target.mcp_file = stored.at("mcp_file").get<std::string>();
      target.mcp_format = stored.at("mcp_format").get<std::string>();
      if (!target.agents_dir.is_absolute() || !target.mcp_file.is_absolute() ||
          (target.mcp_format != "json" && target.mcp_format != "toml")) {
        throw DataLoss("activation target is malformed");
      }
    }
    return target;
  } catch (const DataLoss&) {
    throw;
  } catch (const std::exception&) {
    throw DataLoss("activation target is malformed");
  }
}

// The legacy single target of earlier builds becomes a project target of its directory.
void migrate_legacy_target(const fs::path& state_dir) {
  const fs::path legacy = state_dir / kLegacyTargetFile;
  std::error_code error;
  if (!fs::exists(fs::symlink_status(legacy, error))) return;
  const auto bytes = read_private_file(legacy, kMaxTargetBytes, "activation target");
  if (!bytes) return;
  record_activation_target(state_dir, parse_target(*bytes, kLegacyTargetSchema));
  fs::remove(legacy);
}

// `dir` is `cwd` or one of its ancestors (whole components).
bool contains(const fs::path& dir, const fs::path& cwd) {
  auto d = dir.begin();
  auto c = cwd.begin();
  for (; d != dir.end(); ++d, ++c) {
    if (d->empty() && std::next(d) == dir.end()) return true;  // a trailing separator
    if (c == cwd.end() || *d != *c) return false;
  }
  return true;
}

}  // namespace

std::string project_token(const std::string& installation_key, const fs::path& skills_dir) {
  return "prj-" +
         core::hmac_sha256_hex(installation_key, std::string("ctx.activation-project-v1") + '\0' +
                                                     skills_dir.lexically_normal().string())
             .substr(0, 32);
}

void record_activation_target(const fs::path& state_dir, const ActivationTarget& target) {
  ensure_private_dir(state_dir / kTargetsDir, "activation targets");
  write_private_file(target_file(state_dir, target),
                     core::canonical_json(target_json(target)) + "\n", "activation target");
}

bool forget_activation_target(const fs::path& state_dir, const std::string& adapter,
                              const fs::path& dir, ActivationScope scope) {
  migrate_legacy_target(state_dir);
  ActivationTarget target;
  target.adapter = adapter;
  target.project_dir = dir.lexically_normal();
  target.scope = scope;
  std::error_code error;
  const bool removed = fs::remove(target_file(state_dir, target), error);
  if (error) throw SystemError("cannot remove an activation target: " + error.message());
  return removed;
}

std::vector<ActivationTarget> read_activation_targets(const fs::path& state_dir) {
  migrate_legacy_target(state_dir);
  std::vector<ActivationTarget> targets;
  const fs::path dir = state_dir / kTargetsDir;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return targets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const auto bytes = read_private_file(entry.path(), kMaxTargetBytes, "activation target");
    if (bytes) targets.push_back(parse_target(*bytes, kTargetSchema));
  }
  return targets;
}

std::optional<ActivationTarget> find_activation_target(const std::vector<ActivationTarget>& targets,
                                                       const std::string& adapter,
                                                       const std::optional<fs::path>& cwd) {
  const ActivationTarget* best = nullptr;
  const ActivationTarget* user = nullptr;
  const std::optional<fs::path> where =
      cwd && cwd->is_absolute() ? std::optional<fs::path>(cwd->lexically_normal()) : std::nullopt;
  for (const auto& target : targets) {
    if (target.adapter != adapter) continue;
    if (target.scope == ActivationScope::kUser) {
      user = &target;
      continue;
    }
    if (!where || !contains(target.project_dir, *where)) continue;
    if (best == nullptr || std::distance(target.project_dir.begin(), target.project_dir.end()) >
                               std::distance(best->project_dir.begin(), best->project_dir.end())) {
      best = &target;
    }
  }
  if (best != nullptr) return *best;
  if (user != nullptr) return *user;
  return std::nullopt;
}

ProjectLifecycle::ProjectLifecycle(fs::path state_dir, std::string token)
    : dir_(std::move(state_dir) / "projects"), token_(std::move(token)) {
  file_ = dir_ / (token_ + ".json");
}

Json ProjectLifecycle::load() const {
  const auto bytes = read_private_file(file_, kMaxLifecycleBytes, "project lifecycle");
  if (!bytes) {
    return Json{{"ended", Json::array()},
                {"lingering", Json::object()},
                {"recent", Json::array()},
                {"schema", kLifecycleSchema}};
  }
  try {
    Json state = core::parse_json(*bytes);
    // "ended" came after the first files of this schema: absent means none.
    if (!state.contains("ended")) state["ended"] = Json::array();
    bool ok = state.at("schema") == kLifecycleSchema && state.at("recent").is_array() &&
              state.at("lingering").is_object() && state.at("ended").is_array();
    for (const auto& session : ok ? state.at("ended") : Json::array()) {
      ok = ok && session.is_object() && session.value("streams", Json()).is_array() &&
           session.value("session", Json()).is_object();
    }
    for (const auto& prompt : ok ? state.at("recent") : Json::array()) {
      ok = ok && prompt.is_object() && prompt.value("prompt", Json()).is_string() &&
           prompt.value("capability_ids", Json()).is_array();
      for (const auto& id : ok ? prompt.at("capability_ids") : Json::array()) {
        ok = ok && id.is_string();
      }
    }
    if (!ok) throw DataLoss("project lifecycle is malformed");
    return state;
  } catch (const DataLoss&) {
    throw;
  } catch (const std::exception&) {
    throw DataLoss("project lifecycle is malformed");
  }
}

void ProjectLifecycle::store(const Json& state) const {
  write_private_file(file_, core::canonical_json(state) + "\n", "project lifecycle");
}

std::map<std::string, Json> ProjectLifecycle::record_prompt(
    const std::string& prompt, const std::vector<std::string>& capability_ids) {
  ensure_private_dir(dir_, "projects");
  const ExclusiveFileLock lock(dir_ / (token_ + ".lock"), std::chrono::seconds(10));
  Json state = load();
  Json& recent = state["recent"];
  // Only a digest of the key is kept.
  const std::string prompt_key = core::sha256_hex(prompt);
  for (const auto& prompt : recent) {
    if (prompt.value("prompt", "") == prompt_key) return {};
  }
  recent.push_back(Json{{"capability_ids", capability_ids}, {"prompt", prompt_key}});
  while (recent.size() > kRecentPrompts) recent.erase(recent.begin());
  std::set<std::string> wanted;
  for (const auto& prompt : recent) {
    for (const auto& id : prompt.at("capability_ids")) wanted.insert(id.get<std::string>());
  }
  std::map<std::string, Json> leaving;
  Json& lingering = state["lingering"];
  for (auto it = lingering.begin(); it != lingering.end();) {
    if (wanted.contains(it.key())) {
      ++it;
      continue;
    }
    leaving.emplace(it.key(), it.value());
    it = lingering.erase(it);
  }
  store(state);
  return leaving;
}

bool ProjectLifecycle::wanted(const std::string& capability_id) const {
  const Json state = load();
  for (const auto& prompt : state.at("recent")) {
    for (const auto& id : prompt.at("capability_ids")) {
      if (id == capability_id) return true;
    }
  }
  return false;
}

void ProjectLifecycle::end_session(const std::vector<std::string>& stream_refs,
                                   const Json& session) {
  ensure_private_dir(dir_, "projects");
  const ExclusiveFileLock lock(dir_ / (token_ + ".lock"), std::chrono::seconds(10));
  Json state = load();
  Json& ended = state["ended"];
  const Json entry = {{"session", session}, {"streams", stream_refs}};
  if (std::find(ended.begin(), ended.end(), entry) != ended.end()) return;
  // The same session ended before (with fewer branches then): this entry replaces it.
  ended.erase(std::remove_if(ended.begin(), ended.end(),
                             [&](const Json& old) { return old.at("session") == session; }),
              ended.end());
  ended.push_back(entry);
  while (ended.size() > kEndedSessions) ended.erase(ended.begin());
  store(state);
}

void ProjectLifecycle::resume(const std::string& stream_ref) {
  if (!ended(stream_ref)) return;  // the common case: read, nothing written
  ensure_private_dir(dir_, "projects");
  const ExclusiveFileLock lock(dir_ / (token_ + ".lock"), std::chrono::seconds(10));
  Json state = load();
  Json& ended = state["ended"];
  const auto named = [&](const Json& session) {
    const Json& streams = session.at("streams");
    return std::find(streams.begin(), streams.end(), Json(stream_ref)) != streams.end();
  };
  const auto kept = std::remove_if(ended.begin(), ended.end(), named);
  if (kept == ended.end()) return;
  ended.erase(kept, ended.end());
  store(state);
}

std::optional<Json> ProjectLifecycle::ended(const std::string& stream_ref) const {
  const Json state = load();
  for (const auto& session : state.at("ended")) {
    const Json& streams = session.at("streams");
    if (std::find(streams.begin(), streams.end(), Json(stream_ref)) != streams.end()) {
      return session.at("session");
    }
  }
  return std::nullopt;
}

void ProjectLifecycle::linger(const std::string& capability_id, const Json& material) {
  ensure_private_dir(dir_, "projects");
  const ExclusiveFileLock lock(dir_ / (token_ + ".lock"), std::chrono::seconds(10));
  Json state = load();
  state["lingering"][capability_id] = material;
  store(state);
}

}  // namespace ctx::runtime
