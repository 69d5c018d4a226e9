// The trusted human-decision verifier registry (runtime spec §5.6, DESIGN.md §2 "Binding"):
// (audience, authenticator id, principal digest) → a verifier plugin pinned by identity digest
// plus its configuration (key material, JSON). Persisted as canonical JSON in one private state
// file (0600, O_NOFOLLOW, owner/mode checked, atomic replace). resolve() hands out the loaded
// plugin only while its identity digest is still the pinned one; anything else fails closed.
// Thread-safety: every method may be called from any thread (internally locked).
#ifndef CTX_HOST_RUNTIME_CONSENT_VERIFIER_REGISTRY_HPP_
#define CTX_HOST_RUNTIME_CONSENT_VERIFIER_REGISTRY_HPP_

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "host/core/state_fs.hpp"
#include "host/engine/ports/verifier_port.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/runtime/pinned_plugins.hpp"
#include "host/store/posix_state_fs.hpp"

namespace ctx::runtime {

inline constexpr std::string_view kVerifierRegistrySchema = "ctx.consent-verifier-registry-v1";
inline constexpr std::string_view kVerifierRegistryFileName = "consent-verifiers.json";
inline constexpr std::size_t kMaxVerifierRegistryBytes = 262144;
inline constexpr std::size_t kMaxVerifierRegistrations = 1024;

// No verifier is registered for the assertion's (audience, authenticator, principal).
// Code: kNotFound. Retry: no.
class UnknownHumanDecisionVerifier : public NotFound {
 public:
  using NotFound::NotFound;
};

// The pinned verifier plugin is not loaded, or the loaded one has another identity digest
// ("verifier pin mismatch"). Code: kFailedPrecondition. Retry: not until re-pinned.
class VerifierPinMismatch : public FailedPrecondition {
 public:
  using FailedPrecondition::FailedPrecondition;
};

// The registry file does not hold a valid registry. Code: kDataLoss. Retry: never.
class VerifierRegistryCorruption : public DataLoss {
 public:
  using DataLoss::DataLoss;
};

// The key of one registration.
struct VerifierKey {
  std::string audience;
  std::string authenticator_id;
  std::string principal_digest;
  friend auto operator<=>(const VerifierKey&, const VerifierKey&) = default;
};

struct VerifierRegistration {
  VerifierKey key;
  std::string plugin_id;        // the verifier plugin's id ("ed25519")
  std::string identity_digest;  // the pinned plugin identity digest (64 hex)
  core::Json config;            // the verifier's configuration (an object)

  core::Json to_json() const;
  // Errors: InvalidArgument naming the rule.
  static VerifierRegistration from_json(const core::Json& json);
};

// A registered verifier bound to its key: verify() is true only when the assertion names
// exactly this key, the signing bytes are the assertion's own, and the plugin accepted.
class PinnedVerifier {
 public:
  PinnedVerifier(VerifierKey key, std::string identity_digest,
                 std::shared_ptr<engine::VerifierPort> port)
      : key_(std::move(key)),
        identity_digest_(std::move(identity_digest)),
        port_(std::move(port)) {}

  const VerifierKey& key() const noexcept { return key_; }
  const std::string& identity_digest() const noexcept { return identity_digest_; }

  // Calls the plugin with the exact wire payload and the exact signing bytes. A plugin error
  // (AbiVerifier throws InvalidArgument on a malformed proof) counts as a rejection.
  bool verify(const SignedAssertion& assertion, std::string_view wire_payload,
              std::string_view signing_bytes) const noexcept;

 private:
  VerifierKey key_;
  std::string identity_digest_;
  std::shared_ptr<engine::VerifierPort> port_;
};

// The lookup the consent broker needs; TrustedVerifierRegistry implements it (tests count it).
class VerifierDirectory {
 public:
  virtual ~VerifierDirectory() = default;
  // Errors: UnknownHumanDecisionVerifier; VerifierPinMismatch.
  virtual std::shared_ptr<const PinnedVerifier> resolve(const VerifierKey& key) = 0;
};

class TrustedVerifierRegistry final : public VerifierDirectory {
 public:
  // Opens the registry file `<state_dir>/consent-verifiers.json` (missing: empty registry) and
  // resolves verifiers through `plugins` (the loaded verifier plugins, which host/app fills),
  // which must outlive this object; `fs` (which must outlive it too) writes the file.
  // Errors: VerifierRegistryCorruption; UnsafeStateFile; SystemError.
  TrustedVerifierRegistry(std::filesystem::path state_dir, const PinnedPlugins& plugins,
                          core::StateFs& fs = store::default_state_fs());

  // Adds a registration pinning the verifier plugin `plugin_id` currently loaded in `plugins`,
  // and persists the file. The plugin is instantiated once to check the config.
  // Errors: InvalidArgument (bad key token/digest, config not an object, duplicate key);
  // plugins::PluginNotPinned; ctx::Error from the plugin's create; UnsafeStateFile; SystemError.
  void add(const VerifierKey& key, std::string_view plugin_id, const core::Json& config);

  // Removes the registrations of `keys` (all or none) and persists the file once.
  // Errors: UnknownHumanDecisionVerifier (a key is not registered: nothing removed);
  // UnsafeStateFile; SystemError.
  void remove(const std::vector<VerifierKey>& keys);

  // Errors: UnknownHumanDecisionVerifier (no such key); VerifierPinMismatch (the pinned plugin
  // is not loaded or another identity is); ctx::Error from the plugin's create.
  std::shared_ptr<const PinnedVerifier> resolve(const VerifierKey& key) override;

  std::vector<VerifierRegistration> registrations() const;
  const std::filesystem::path& file() const noexcept { return file_; }

 private:
  void persist_locked() const;

  std::filesystem::path file_;
  const PinnedPlugins& plugins_;
  core::StateFs& fs_;
  mutable std::mutex mutex_;
  std::map<VerifierKey, VerifierRegistration> entries_;
  std::map<VerifierKey, std::shared_ptr<const PinnedVerifier>> loaded_;
};

// The key an assertion names.
VerifierKey verifier_key_of(const SignedAssertion& assertion);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CONSENT_VERIFIER_REGISTRY_HPP_
