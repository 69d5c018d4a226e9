#include "host/runtime/consent/install_policy_store.hpp"

#include <array>
#include <optional>

#include "host/core/crypto.hpp"
#include "host/runtime/consent/private_file.hpp"

namespace ctx::runtime {
namespace {

constexpr std::string_view kWhat = "install policy store";

std::string file_bytes(const InstallConsentPolicy& policy) {
  return core::canonical_json(policy.to_json()) + "\n";
}

constexpr std::size_t mode_bit(InstallMode mode) noexcept {
  return mode == InstallMode::kAskEachTime ? 0 : 1;
}

}  // namespace

std::string_view install_mode_name(InstallMode mode) noexcept { return engine::to_string(mode); }

InstallMode parse_install_mode(std::string_view name) {
  if (const auto mode = engine::find_enum<InstallMode>(name)) return *mode;
  throw InvalidArgument("unknown install mode");
}

core::Json InstallConsentPolicy::digest_json() const {
  return core::Json{{"agent_mode", install_mode_name(agent_mode)},
                    {"mcp_server_mode", install_mode_name(mcp_server_mode)},
                    {"schema", kInstallPolicySchema},
                    {"skill_mode", install_mode_name(skill_mode)}};
}

std::string InstallConsentPolicy::policy_digest() const {
  // Three two-valued modes: eight policies, each digest computed once per process.
  static const std::array<std::string, 8> digests = [] {
    constexpr InstallMode kModes[] = {InstallMode::kAskEachTime, InstallMode::kPreapprovedAuto};
    std::array<std::string, 8> all;
    for (const InstallMode skill : kModes) {
      for (const InstallMode agent : kModes) {
        for (const InstallMode mcp : kModes) {
          const InstallConsentPolicy policy{skill, agent, mcp};
          all[mode_bit(skill) * 4 + mode_bit(agent) * 2 + mode_bit(mcp)] =
              core::canonical_digest(policy.digest_json());
        }
      }
    }
    return all;
  }();
  static_assert(std::size(engine::kConsentModeStrings.values) == 2);
  return digests[mode_bit(skill_mode) * 4 + mode_bit(agent_mode) * 2 + mode_bit(mcp_server_mode)];
}

core::Json InstallConsentPolicy::to_json() const {
  core::Json json = digest_json();
  json.erase("schema");
  json["policy_digest"] = policy_digest();
  return json;
}

InstallConsentPolicy InstallConsentPolicy::from_json(const core::Json& json) {
  if (!json.is_object() || json.size() != 4) throw InvalidArgument("install policy key set");
  for (const char* key : {"agent_mode", "mcp_server_mode", "skill_mode", "policy_digest"}) {
    if (!json.contains(key) || !json.at(key).is_string()) {
      throw InvalidArgument("install policy key set");
    }
  }
  InstallConsentPolicy policy;
  policy.skill_mode = parse_install_mode(json.at("skill_mode").get<std::string>());
  policy.agent_mode = parse_install_mode(json.at("agent_mode").get<std::string>());
  policy.mcp_server_mode = parse_install_mode(json.at("mcp_server_mode").get<std::string>());
  if (json.at("policy_digest").get<std::string>() != policy.policy_digest()) {
    throw InvalidArgument("install policy digest does not match its modes");
  }
  return policy;
}

InstallMode InstallConsentPolicy::mode_for(std::string_view kind) const {
  const auto typed = engine::find_enum<engine::CapabilityKind>(kind);
  if (!typed) throw InvalidArgument("not an installable kind");
  return mode_for(*typed);
}

InstallMode InstallConsentPolicy::mode_for(engine::CapabilityKind kind) const {
  switch (kind) {
    case engine::CapabilityKind::kSkill:
      return skill_mode;
    case engine::CapabilityKind::kAgent:
      return agent_mode;
    case engine::CapabilityKind::kMcpServer:
      return mcp_server_mode;
    case engine::CapabilityKind::kHarness:
      break;
  }
  throw InvalidArgument("not an installable kind");
}

InstallRoute route_install_authorization(const InstallConsentPolicy& policy,
                                         engine::CapabilityKind kind, bool permission_expansion,
                                         bool credential_requirement) {
  const InstallMode mode = policy.mode_for(kind);
  if (permission_expansion) return {true, "permission-expansion-requires-consent"};
  if (credential_requirement) return {true, "credentials-require-consent"};
  if (mode == InstallMode::kPreapprovedAuto) return {false, "matching-preapproved-policy"};
  return {true, "per-install-consent-required"};
}

InstallRoute route_install_authorization(const InstallConsentPolicy& policy, std::string_view kind,
                                         bool permission_expansion, bool credential_requirement) {
  const auto typed = engine::find_enum<engine::CapabilityKind>(kind);
  if (!typed) throw InvalidArgument("not an installable kind");
  return route_install_authorization(policy, *typed, permission_expansion, credential_requirement);
}

InstallPolicyStore::InstallPolicyStore(std::filesystem::path root, core::StateFs& fs)
    : root_(std::move(root)), fs_(&fs) {
  if (!root_.is_absolute()) throw InvalidArgument("install policy root must be absolute");
  root_ = root_.lexically_normal();
  if (!root_.has_filename()) root_ = root_.parent_path();
}

std::filesystem::path InstallPolicyStore::lock_path() const {
  // Appended, not "." + name + "...": GCC 12 -O3 reports a false -Wrestrict in operator+.
  std::string name = ".";
  name += root_.filename().string();
  name += ".policy-current";
  return root_.parent_path() / name;
}

std::optional<InstallConsentPolicy> InstallPolicyStore::read_current() const {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(root_, ec))) return std::nullopt;
  ensure_private_dir(root_, kWhat);
  const auto current = read_private_file(root_ / "current.json", kMaxInstallPolicyBytes, kWhat);
  if (!current) return std::nullopt;
  InstallConsentPolicy policy;
  try {
    if (current->empty() || current->back() != '\n') throw InvalidArgument("no final newline");
    policy = InstallConsentPolicy::from_json(
        core::parse_canonical_json(std::string_view(*current).substr(0, current->size() - 1)));
  } catch (const InvalidArgument&) {
    throw InstallPolicyCorruption("install policy store corrupt: current policy is invalid");
  }
  ensure_private_dir(root_ / "snapshots", kWhat);
  const auto snapshot = read_private_file(root_ / "snapshots" / (policy.policy_digest() + ".json"),
                                          kMaxInstallPolicyBytes, kWhat);
  if (!snapshot || *snapshot != *current) {
    throw InstallPolicyCorruption(
        "install policy store corrupt: current policy does not match its snapshot");
  }
  return policy;
}

InstallConsentPolicy InstallPolicyStore::load() const {
  return read_current().value_or(InstallConsentPolicy::safe_default());
}

bool InstallPolicyStore::has_persisted() const { return read_current().has_value(); }

std::optional<InstallConsentPolicy> InstallPolicyStore::persisted() const { return read_current(); }

void InstallPolicyStore::persist(const InstallConsentPolicy& policy) const {
  ensure_private_dir(root_, kWhat, DirDurability::kDurable, *fs_);
  ExclusiveFileLock lock(lock_path(), std::chrono::seconds(30));
  ensure_private_dir(root_ / "snapshots", kWhat, DirDurability::kDurable, *fs_);
  const std::string bytes = file_bytes(policy);
  const std::filesystem::path snapshot = root_ / "snapshots" / (policy.policy_digest() + ".json");
  const auto existing = read_private_file(snapshot, kMaxInstallPolicyBytes, kWhat);
  if (existing && *existing != bytes) {
    throw InstallPolicyCorruption("install policy store corrupt: snapshot differs from its digest");
  }
  if (!existing) write_private_file(snapshot, bytes, kWhat, *fs_);
  write_private_file(root_ / "current.json", bytes, kWhat, *fs_);
}

InstallPolicyStore::Hold InstallPolicyStore::hold(std::string_view expected_digest,
                                                  std::chrono::milliseconds timeout) const {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(root_, ec))) {
    throw InstallPolicyMissing("no persisted install policy is available");
  }
  auto lock = std::make_unique<ExclusiveFileLock>(lock_path(), timeout);
  const auto current = read_current();
  if (!current) throw InstallPolicyMissing("no persisted install policy is available");
  if (current->policy_digest() != expected_digest) {
    throw InstallPolicyChanged("install policy changed");
  }
  return Hold(*this, std::move(lock), *current);
}

void InstallPolicyStore::Hold::assert_current() const {
  const auto current = store_->read_current();
  if (!current) throw InstallPolicyMissing("no persisted install policy is available");
  if (!(*current == policy_)) throw InstallPolicyChanged("install policy changed");
}

}  // namespace ctx::runtime
