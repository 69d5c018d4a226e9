// Install consent policy (runtime spec §6.1): per installable kind "ask-each-time" or
// "preapproved-auto"; the safe default asks for every kind; permission expansion or a credential
// requirement always asks. Persisted under a root as <root>/snapshots/<digest>.json (immutable)
// and <root>/current.json, both CJSON(policy + policy_digest) + "\n", 0600, in 0700 directories.
// Thread-safety: InstallConsentPolicy is a value; InstallPolicyStore methods may be called from
// several threads and processes (persist serialises through a lock file).
#ifndef CTX_HOST_RUNTIME_CONSENT_INSTALL_POLICY_STORE_HPP_
#define CTX_HOST_RUNTIME_CONSENT_INSTALL_POLICY_STORE_HPP_

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/core/state_fs.hpp"
#include "host/engine/vocabulary.hpp"
#include "host/runtime/file_lock.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime {

inline constexpr std::string_view kInstallPolicySchema = "ctx.install-consent-policy-v1";
inline constexpr std::size_t kMaxInstallPolicyBytes = 4096;

// The engine's install consent mode, spelled by its one strings table.
using InstallMode = engine::ConsentMode;

// "ask-each-time" | "preapproved-auto".
std::string_view install_mode_name(InstallMode mode) noexcept;
// Errors: InvalidArgument ("unknown install mode").
InstallMode parse_install_mode(std::string_view name);

struct InstallConsentPolicy {
  InstallMode skill_mode = InstallMode::kAskEachTime;
  InstallMode agent_mode = InstallMode::kAskEachTime;
  InstallMode mcp_server_mode = InstallMode::kAskEachTime;

  // Every kind asks each time.
  static InstallConsentPolicy safe_default() noexcept { return {}; }

  // {"agent_mode","mcp_server_mode","schema","skill_mode"}.
  core::Json digest_json() const;
  // SHA(CJSON(digest_json())).
  std::string policy_digest() const;
  // digest_json() minus "schema", plus "policy_digest": the persisted object.
  core::Json to_json() const;
  // Inverse of to_json(): exact key set, known modes, matching digest.
  // Errors: InvalidArgument naming the rule.
  static InstallConsentPolicy from_json(const core::Json& json);

  // The mode for an installable kind ("skill" | "agent" | "mcp-server").
  // Errors: InvalidArgument ("not an installable kind") for anything else (e.g. "harness").
  InstallMode mode_for(std::string_view kind) const;
  InstallMode mode_for(engine::CapabilityKind kind) const;

  friend bool operator==(const InstallConsentPolicy&, const InstallConsentPolicy&) = default;
};

// How an install request is authorised.
struct InstallRoute {
  bool interactive = true;  // a human must decide
  std::string reason;       // "permission-expansion-requires-consent" | ... (spec §6.1)
  friend bool operator==(const InstallRoute&, const InstallRoute&) = default;
};

// Routes an install of `kind` under `policy`: permission expansion, then a credential
// requirement force a prompt; otherwise the kind's mode decides.
// Errors: InvalidArgument for a kind that is not installable.
InstallRoute route_install_authorization(const InstallConsentPolicy& policy,
                                         engine::CapabilityKind kind, bool permission_expansion,
                                         bool credential_requirement);
// As above for a kind's spelling (InvalidArgument for an unknown one).
InstallRoute route_install_authorization(const InstallConsentPolicy& policy, std::string_view kind,
                                         bool permission_expansion, bool credential_requirement);

// A stored policy file does not hold what its name or the snapshot says ("install policy store
// corrupt: <rule>"). Code: kDataLoss. Retry: never.
class InstallPolicyCorruption : public DataLoss {
 public:
  using DataLoss::DataLoss;
};

// The persisted policy is not the expected one (held for a decision that routed under another
// digest). Code: kAborted. Retry: after re-reading the policy.
class InstallPolicyChanged : public Error {
 public:
  explicit InstallPolicyChanged(const std::string& message)
      : Error(message, ErrorCode::kAborted) {}
};

// No persisted policy exists where one is required. Code: kFailedPrecondition.
class InstallPolicyMissing : public FailedPrecondition {
 public:
  using FailedPrecondition::FailedPrecondition;
};

class InstallPolicyStore {
 public:
  // A held policy: the lock file is held until destruction; assert_current() re-reads.
  class Hold {
   public:
    Hold(const InstallPolicyStore& store, std::unique_ptr<ExclusiveFileLock> lock,
         InstallConsentPolicy policy)
        : store_(&store), lock_(std::move(lock)), policy_(policy) {}
    const InstallConsentPolicy& policy() const noexcept { return policy_; }
    // Errors: InstallPolicyChanged when the current file no longer holds policy();
    // InstallPolicyMissing; InstallPolicyCorruption; UnsafeStateFile.
    void assert_current() const;

   private:
    const InstallPolicyStore* store_;
    std::unique_ptr<ExclusiveFileLock> lock_;
    InstallConsentPolicy policy_;
  };

  // `root` must be absolute (InvalidArgument otherwise). Nothing is created until persist(),
  // which writes through `fs` (which must outlive this object).
  explicit InstallPolicyStore(std::filesystem::path root,
                              core::StateFs& fs = store::default_state_fs());

  const std::filesystem::path& root() const noexcept { return root_; }

  // The current policy; the safe default when the root or current.json is missing. The current
  // file must equal its snapshot byte for byte.
  // Errors: InstallPolicyCorruption; UnsafeStateFile; SystemError.
  InstallConsentPolicy load() const;
  // True when a valid current file exists. Errors: as load().
  bool has_persisted() const;
  // The persisted current policy, or nullopt when none exists: has_persisted() and load() in one
  // read. Errors: as load().
  std::optional<InstallConsentPolicy> persisted() const;
  // Writes the snapshot (which must equal any existing one), then replaces current.json.
  // Errors: InstallPolicyCorruption (a different snapshot exists); UnsafeStateFile; SystemError.
  void persist(const InstallConsentPolicy& policy) const;
  // Holds the lock and requires the persisted policy's digest to be `expected_digest`.
  // Errors: InstallPolicyMissing; InstallPolicyChanged; as load().
  Hold hold(std::string_view expected_digest,
            std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

 private:
  std::optional<InstallConsentPolicy> read_current() const;
  std::filesystem::path lock_path() const;

  std::filesystem::path root_;
  core::StateFs* fs_;  // never null; a pointer so that the store stays copyable
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CONSENT_INSTALL_POLICY_STORE_HPP_
