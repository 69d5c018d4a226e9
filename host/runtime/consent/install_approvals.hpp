// Standing install approvals: the installs a human approved (signed grant, install applied), one
// per capability, each for exact material (identity digest, content digest and size) under the
// install consent policy in force (its digest). A capability whose catalog material and the
// current policy still match its approval is re-activated later without a new consent;
// `revoke` forgets an approval. Persisted as one private file (0600, canonical JSON, keyed with
// the installation key: altered bytes fail closed), changed under a lock file, replaced
// atomically. Thread-safety: methods may be called from several threads and processes.
#ifndef CTX_HOST_RUNTIME_CONSENT_INSTALL_APPROVALS_HPP_
#define CTX_HOST_RUNTIME_CONSENT_INSTALL_APPROVALS_HPP_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "host/core/canonical_json.hpp"
#include "host/core/state_fs.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/vocabulary.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime {

struct InstallApproval {
  std::string capability_id;  // "kind:name"
  engine::CapabilityKind kind = engine::CapabilityKind::kSkill;
  std::string material_identity_digest;
  std::string content_sha256;
  std::int64_t content_bytes = 0;
  std::string policy_digest;  // the install consent policy the approval was given under
  std::string approved_at;    // canonical UTC
  friend bool operator==(const InstallApproval&, const InstallApproval&) = default;
};

// Capability id -> its approval.
using InstallApprovalMap = std::map<std::string, InstallApproval>;

class InstallApprovals {
 public:
  // `file` absolute (its parent a private directory); `key` the installation key; `fs` (which
  // must outlive this object) writes the file. Errors: InvalidArgument (relative path, empty key).
  InstallApprovals(std::filesystem::path file, std::string key,
                   core::StateFs& fs = store::default_state_fs());

  // Every recorded approval (empty when the file does not exist).
  // Errors: DataLoss ("install approvals are altered or malformed"); UnsafeStateFile;
  // SystemError.
  InstallApprovalMap load() const;
  // Records `approval` (replacing an earlier one of that capability). Idempotent.
  // Errors: InvalidArgument (malformed fields); as load().
  void record(const InstallApproval& approval) const;
  // Forgets the approval of `capability_id`; false when there was none. Errors: as load().
  bool revoke(const std::string& capability_id) const;

 private:
  void write(const InstallApprovalMap& approvals) const;

  std::filesystem::path file_;
  std::string key_;
  core::StateFs& fs_;
};

// The approvals of `all` given under `policy_digest` (an approval under another policy asks
// again).
InstallApprovalMap approvals_under(const InstallApprovalMap& all, const std::string& policy_digest);

// True when `approvals` holds an approval of `capability_id` (of `kind`) for exactly the material
// `material_identity_digest` under the policy `policy_digest`.
bool approves(const InstallApprovalMap& approvals, const std::string& capability_id,
              engine::CapabilityKind kind, const std::string& material_identity_digest,
              const std::string& policy_digest);

// The same for the install `descriptor` describes (its capability and result material), over
// what `approvals` (may be null: false) holds now. Errors: as InstallApprovals::load().
bool approves_install(const InstallApprovals* approvals,
                      const engine::InstallPlanDescriptor& descriptor,
                      const std::string& policy_digest);

// SHA(CJSON) of the approvals' exact fields: what a planning snapshot that uses them pins.
std::string approvals_digest(const InstallApprovalMap& approvals);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CONSENT_INSTALL_APPROVALS_HPP_
