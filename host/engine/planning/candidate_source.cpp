#include "host/engine/planning/candidate_source.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "host/engine/errors.hpp"
#include "host/engine/lexical.hpp"
#include "host/engine/planning/errors.hpp"
#include "host/engine/planning/lexical.hpp"

namespace ctx::engine::planning {
namespace {

using core::Json;

Json optional_string(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// _safe_tags: at most 100 canonical tokens, unique; returned sorted.
std::optional<std::vector<std::string>> safe_tags(const std::vector<std::string>& tags) {
  if (tags.size() > 100) return std::nullopt;
  for (const auto& tag : tags) {
    if (!is_canonical_token(tag)) return std::nullopt;
  }
  std::vector<std::string> sorted = tags;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  return sorted;
}

std::string source_digest(const std::string& capability_id, CapabilityKind kind,
                          const std::string& name, const std::vector<std::string>& tags,
                          CandidateActionability actionability,
                          const std::optional<std::string>& install_descriptor_digest,
                          const std::optional<std::string>& install_plan_digest,
                          const std::optional<std::string>& material_descriptor_digest) {
  Json value = Json::object();
  value["actionability"] = actionability;
  value["capability_id"] = capability_id;
  value["install_descriptor_digest"] = optional_string(install_descriptor_digest);
  value["install_plan_digest"] = optional_string(install_plan_digest);
  value["kind"] = kind;
  value["material_descriptor_digest"] = optional_string(material_descriptor_digest);
  value["name"] = name;
  value["schema"] = std::string(kCandidateProjectionVersion);
  value["tags"] = tags;
  return core::canonical_digest(value, core::Encoding::kAscii);
}

// Canonical tokens and digests never contain '|' or ',', so this key is unambiguous.
std::string projection_inputs(CapabilityKind kind, const std::string& name,
                              const std::vector<std::string>& tags,
                              CandidateActionability actionability,
                              const std::optional<std::string>& install_descriptor_digest,
                              const std::optional<std::string>& install_plan_digest,
                              const std::optional<std::string>& material_descriptor_digest) {
  std::string out = std::string(to_string(kind)) + "|" + name + "|" +
                    std::string(to_string(actionability)) + "|" +
                    install_descriptor_digest.value_or("-") + "|" +
                    install_plan_digest.value_or("-") + "|" +
                    material_descriptor_digest.value_or("-") + "|";
  for (const auto& tag : tags) out.append(tag).append(",");
  return out;
}

// "kind:name" of a graph row.
std::string capability_id_of(const RetrievedNode& row) {
  return std::string(to_string(row.kind)) + ":" + row.name;
}

auto order_key(const CapabilityCandidate& c) {
  return std::make_tuple(-c.normalized_score_ppm, std::cref(c.capability_id),
                         std::cref(c.source_digest));
}

// The sorted unique matching signals of a row (its tags, already sorted unique, and its name's
// tokens that are work signals) and its reason codes, sorted: graph-match < language-match <
// name-match < signal-match < tag-match.
std::pair<std::vector<std::string>, std::vector<std::string>> matches_of(
    const std::string& name, const std::vector<std::string>& tags,
    const std::set<std::string>& work_signals, const std::set<std::string>& signals,
    const std::set<std::string>& languages) {
  std::vector<std::string> tag_matches;
  for (const auto& tag : tags) {
    if (work_signals.count(tag)) tag_matches.push_back(tag);
  }
  std::vector<std::string> name_matches;
  for (auto& token : ascii_tokens(name)) {
    if (work_signals.count(token)) name_matches.push_back(std::move(token));
  }
  std::sort(name_matches.begin(), name_matches.end());
  name_matches.erase(std::unique(name_matches.begin(), name_matches.end()), name_matches.end());
  std::vector<std::string> matching;
  matching.reserve(tag_matches.size() + name_matches.size());
  std::set_union(tag_matches.begin(), tag_matches.end(), name_matches.begin(), name_matches.end(),
                 std::back_inserter(matching));
  bool language_match = false;
  bool signal_match = false;
  for (const auto& m : matching) {
    language_match = language_match || languages.count(m) != 0;
    signal_match = signal_match || signals.count(m) != 0;
  }
  std::vector<std::string> reasons{"graph-match"};
  if (language_match) reasons.emplace_back("language-match");
  if (!name_matches.empty()) reasons.emplace_back("name-match");
  if (signal_match) reasons.emplace_back("signal-match");
  if (!tag_matches.empty()) reasons.emplace_back("tag-match");
  return {std::move(matching), std::move(reasons)};
}

// One candidate per identity, in order_key order; identities seen with two source digests are
// dropped. Keys view the candidates' ids and are only compared while the map is filled, before
// any move below.
std::vector<CapabilityCandidate> one_per_identity(std::vector<CapabilityCandidate> candidates) {
  std::map<std::string_view, std::vector<std::size_t>> by_id;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    by_id[candidates[i].capability_id].push_back(i);
  }
  std::vector<CapabilityCandidate> out;
  out.reserve(by_id.size());
  for (const auto& entry : by_id) {
    const auto& group = entry.second;
    const auto& first_source = candidates[group.front()].source_digest;
    if (std::any_of(group.begin() + 1, group.end(),
                    [&](std::size_t i) { return candidates[i].source_digest != first_source; })) {
      continue;
    }
    const std::size_t best = *std::min_element(group.begin(), group.end(), [&](auto a, auto b) {
      return order_key(candidates[a]) < order_key(candidates[b]);
    });
    out.push_back(std::move(candidates[best]));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return order_key(a) < order_key(b); });
  return out;
}

}  // namespace

CatalogCandidateSource::CatalogCandidateSource(const GraphRetrievalPort& graph,
                                               MaterialPort* material, InstallBundlePort* install,
                                               std::int64_t candidate_limit,
                                               std::size_t memo_capacity)
    : graph_(graph),
      material_(material),
      install_(install),
      candidate_limit_(candidate_limit),
      // At least one retrieval's rows, so a plan never loses an answer it is still checking.
      material_seen_(std::max(memo_capacity, static_cast<std::size_t>(kMaxCandidateLimit))),
      install_seen_(std::max(memo_capacity, static_cast<std::size_t>(kMaxCandidateLimit))),
      projections_(memo_capacity) {
  if (candidate_limit < 6 || candidate_limit > kMaxCandidateLimit) {
    throw PlannerValidationError("candidate_limit must be an integer from 6 through 512");
  }
  if (material_ != nullptr) {
    material_snapshot_digest_ = material_->material_snapshot_digest();
    if (!is_digest(*material_snapshot_digest_)) {
      throw PlannerValidationError("material snapshot digest must be a lowercase SHA-256 digest");
    }
  }
  if (install_ != nullptr) {
    installation_snapshot_digest_ = install_->installation_snapshot_digest();
    if (!is_digest(*installation_snapshot_digest_)) {
      throw PlannerValidationError(
          "installation snapshot digest must be a lowercase SHA-256 digest");
    }
  }
  Json value = Json::object();
  value["adapter_version"] = std::string(kIndexedAdapterVersion);
  Json kinds = Json::array();
  // Every declared kind, in the one table's order (skill, agent, mcp-server, harness).
  for (const CapabilityKind kind : kCapabilityKindStrings.values) {
    kinds.push_back(std::string(to_string(kind)));
  }
  value["allowed_entity_types"] = kinds;
  value["artifact_sha256"] = graph_.artifact_sha256();
  value["graph_schema_version"] = graph_.graph_schema_version();
  value["installation_snapshot_digest"] = optional_string(installation_snapshot_digest_);
  value["material_snapshot_digest"] = optional_string(material_snapshot_digest_);
  value["projection_version"] = std::string(kCandidateProjectionVersion);
  catalog_snapshot_digest_ = core::canonical_digest(value, core::Encoding::kAscii);
}

std::vector<std::string> CatalogCandidateSource::query_tags(const WorkObservation& observation) {
  std::set<std::string> work_signals(observation.signals.begin(), observation.signals.end());
  work_signals.insert(observation.languages.begin(), observation.languages.end());
  return std::vector<std::string>(work_signals.begin(), work_signals.end());
}

std::vector<RetrievedNode> CatalogCandidateSource::retrieve_rows(
    const std::vector<std::string>& tags) const {
  if (material_ != nullptr && material_->material_snapshot_digest() != *material_snapshot_digest_) {
    throw CandidateSourceUnavailable("indexed material snapshot changed after construction");
  }
  if (install_ != nullptr &&
      install_->installation_snapshot_digest() != *installation_snapshot_digest_) {
    throw CandidateSourceUnavailable("indexed install snapshot changed after construction");
  }
  std::vector<RetrievedNode> rows = graph_.retrieve(tags, candidate_limit_);
  if (static_cast<std::int64_t>(rows.size()) > candidate_limit_) {
    throw CandidateSourceUnavailable("indexed graph candidate retrieval returned an invalid pool");
  }
  return rows;
}

std::optional<CatalogCandidateSource::RowAuthority> CatalogCandidateSource::observe_authority(
    CapabilityKind kind, const std::string& capability_id) const {
  RowAuthority authority;
  if (material_ != nullptr) {
    try {
      authority.material = material_->describe(capability_id, kind);
    } catch (const CandidateAuthorityUnavailable&) {
      authority.material.reset();
    } catch (const InvalidIdentityError&) {
      authority.material.reset();
    } catch (const std::exception&) {
      throw CandidateSourceUnavailable("indexed material descriptor retrieval failed");
    }
    const auto& material = authority.material;
    if (const auto* seen = material_seen_.find(capability_id)) {
      if (*seen != material) {
        throw CandidateSourceUnavailable("indexed material descriptor changed within a snapshot");
      }
    } else {
      material_seen_.put(capability_id, material);
    }
    if (!material || material->capability_id() != capability_id || material->kind() != kind ||
        material->provenance_digest() != *material_snapshot_digest_) {
      return std::nullopt;  // malformed authority is local to this row
    }
  }
  authority.loadable =
      authority.material && authority.material->actionability() == Actionability::kLoad;
  if (install_ != nullptr && !authority.loadable && engine::is_installable_kind(kind)) {
    std::optional<std::string> fingerprint;
    std::optional<InstallPlanningBundle> bundle;
    bool malformed = false;
    try {
      bundle = install_->describe_bundle(capability_id, kind);
      fingerprint = bundle ? bundle->descriptor().descriptor_digest() + ":" +
                                 bundle->result_material().identity_digest()
                           : std::string();
    } catch (const CandidateAuthorityUnavailable&) {
      malformed = true;
    } catch (const InvalidIdentityError&) {
      malformed = true;
    } catch (const std::exception&) {
      throw CandidateSourceUnavailable("indexed install descriptor retrieval failed");
    }
    if (const auto* seen = install_seen_.find(capability_id)) {
      if (*seen != fingerprint) {
        throw CandidateSourceUnavailable("indexed install descriptor changed within a snapshot");
      }
    } else {
      install_seen_.put(capability_id, fingerprint);
    }
    if (malformed) return std::nullopt;
    if (bundle) {
      const auto& d = bundle->descriptor();
      if (d.capability_id() != capability_id || d.kind() != kind ||
          d.provenance_digest() != *installation_snapshot_digest_) {
        return std::nullopt;
      }
      authority.install = d;
    }
  }
  return authority;
}

std::vector<CapabilityCandidate> CatalogCandidateSource::retrieve(
    const WorkObservation& observation) const {
  return retrieve_pinned(observation).candidates;
}

CandidateRetrieval CatalogCandidateSource::retrieve_pinned(
    const WorkObservation& observation) const {
  const std::vector<std::string> tags = query_tags(observation);
  if (tags.empty()) return {};
  const std::set<std::string> work_signals(tags.begin(), tags.end());
  std::lock_guard lock(mutex_);
  CandidateRetrieval out;
  out.rows = retrieve_rows(tags);
  const std::vector<RetrievedNode>& rows = out.rows;
  const std::set<std::string> languages(observation.languages.begin(), observation.languages.end());
  const std::set<std::string> signals(observation.signals.begin(), observation.signals.end());
  // Every row's authority is asked for first (drift within the snapshot is detected per row as
  // before); a row of an invalid name is never asked about and never projected.
  std::vector<std::optional<RowAuthority>> authorities;
  authorities.reserve(rows.size());
  for (const auto& row : rows) {
    if (!is_capability_name(row.name)) {
      authorities.emplace_back(std::nullopt);
      continue;
    }
    authorities.push_back(observe_authority(row.kind, capability_id_of(row)));
  }
  const std::vector<std::string> signal_list(signals.begin(), signals.end());
  const std::vector<std::string> language_list(languages.begin(), languages.end());
  if (last_ && last_->rows == rows && last_->signals == signal_list &&
      last_->languages == language_list && last_->authorities == authorities) {
    out.candidates = last_->candidates;
    return out;
  }
  std::vector<CapabilityCandidate> candidates;
  for (std::size_t at = 0; at < rows.size(); ++at) {
    const auto& row = rows[at];
    const std::optional<RowAuthority>& authority = authorities[at];
    if (!authority) continue;
    const std::string capability_id = capability_id_of(row);
    const std::optional<MaterialDescriptor>& material = authority->material;
    const bool loadable = authority->loadable;
    const std::optional<InstallPlanDescriptor>& install = authority->install;
    const auto tags_safe = safe_tags(row.tags);
    if (!tags_safe || row.normalized_score_ppm < 0 || row.normalized_score_ppm > 1'000'000) {
      continue;
    }
    auto [matching, reasons] = matches_of(row.name, *tags_safe, work_signals, signals, languages);
    CapabilityCandidate candidate;
    candidate.capability_id = capability_id;
    candidate.kind = row.kind;
    candidate.name = row.name;
    candidate.normalized_score_ppm = row.normalized_score_ppm;
    candidate.matching_signals = std::move(matching);
    candidate.reason_codes = std::move(reasons);
    if (loadable) {
      candidate.actionability = CandidateActionability::kLoad;
    } else if (install) {
      candidate.actionability = CandidateActionability::kInstall;
      candidate.install_descriptor_digest = install->descriptor_digest();
      candidate.install_plan_digest = install->plan_digest();
    } else {
      candidate.actionability = CandidateActionability::kManual;
    }
    const auto install_digest =
        install ? std::optional<std::string>(install->descriptor_digest()) : std::nullopt;
    const auto material_digest =
        material ? std::optional<std::string>(material->descriptor_digest()) : std::nullopt;
    std::string inputs = projection_inputs(row.kind, row.name, *tags_safe, candidate.actionability,
                                           install_digest, candidate.install_plan_digest,
                                           material_digest);
    const Projection* projected = projections_.find(capability_id);
    if (projected == nullptr || projected->inputs != inputs) {
      projected = projections_.put(
          capability_id,
          Projection{std::move(inputs),
                     source_digest(capability_id, row.kind, row.name, *tags_safe,
                                   candidate.actionability, install_digest,
                                   candidate.install_plan_digest, material_digest)});
    }
    candidate.source_digest = projected->source_digest;
    try {
      validate_capability_candidate(candidate);
    } catch (const PlannerValidationError&) {
      continue;
    }
    candidates.push_back(std::move(candidate));
  }
  out.candidates = one_per_identity(std::move(candidates));
  last_ = LastProjection{signal_list, language_list, rows, std::move(authorities), out.candidates};
  return out;
}

bool CatalogCandidateSource::unchanged(const WorkObservation& observation,
                                       const CandidateRetrieval& earlier) const {
  const std::vector<std::string> tags = query_tags(observation);
  if (tags.empty()) return earlier.rows.empty();
  std::lock_guard lock(mutex_);
  if (retrieve_rows(tags) != earlier.rows) return false;
  // The same rows: ask every authority port again, as the projection did (a changed answer
  // within the snapshot is CandidateSourceUnavailable); the projection itself is deterministic.
  for (const auto& row : earlier.rows) {
    if (!is_capability_name(row.name)) continue;
    observe_authority(row.kind, capability_id_of(row));
  }
  return true;
}

std::optional<MaterialDescriptor> CatalogCandidateSource::observed_material(
    const std::string& capability_id) const {
  std::lock_guard lock(mutex_);
  const auto* seen = material_seen_.find(capability_id);
  return seen == nullptr ? std::nullopt : *seen;
}

}  // namespace ctx::engine::planning
