// Shared parts of the consent tests: the real verifier .so files loaded through the host's
// PluginLoader into a PluginRegistry, keys and signatures from the real `openssl` and
// `ssh-keygen` binaries, a manual trusted clock, challenges, and file snapshots for proving
// that nothing durable changed.
#ifndef CTX_TESTS_HOST_RUNTIME_CONSENT_CONSENT_FIXTURE_HPP_
#define CTX_TESTS_HOST_RUNTIME_CONSENT_CONSENT_FIXTURE_HPP_

#include <gtest/gtest.h>

#include <atomic>
#include <ctx/loader/plugin_loader.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <typeinfo>

#include "host/app/installation.hpp"
#include "host/core/crypto.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "host/runtime/consent/consent_challenge.hpp"
#include "tests/plugins/verifiers/support/wire_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::testing {

// A trusted clock the test moves by hand.
class ManualClock final : public core::Clock {
 public:
  explicit ManualClock(std::string_view start) : micros_(core::parse_rfc3339(start).micros) {}
  core::Timestamp now() const override { return core::Timestamp{micros_.load()}; }
  void set(std::string_view text) { micros_ = core::parse_rfc3339(text).micros; }

 private:
  std::atomic<std::int64_t> micros_;
};

inline std::string digest_of(std::string_view label) { return core::sha256_hex(label); }

// A challenge as the service would publish it for one skill install.
inline runtime::ConsentChallengeFields challenge_fields(
    const std::string& consent_id = "consent-1") {
  runtime::ConsentChallengeFields f;
  f.challenge_id = consent_id;
  f.audience = "ctx-managed-query";
  f.workspace_identity_digest = digest_of("workspace");
  f.scope = core::Json{{"repository", "repo-1"}, {"session", "session-1"},
                       {"tenant", "tenant-1"}, {"workspace", "workspace-1"}};
  f.capability_id = "skill:installable";
  f.kind = engine::CapabilityKind::kSkill;
  f.source_digest = digest_of("source");
  f.catalog_snapshot_digest = digest_of("catalog");
  f.plan_id = "plan-1";
  f.install_plan_digest = digest_of("install-plan");
  f.descriptor_digest = digest_of("descriptor");
  f.execution_binding_digest = runtime::execution_binding_digest(
      "ctx-skill-installer-v1", digest_of("installer-plugin"), digest_of("host"),
      digest_of("target-root"));
  f.selection_digest = runtime::selection_binding_digest(core::Json{{"capability", "installable"}});
  f.material_identity_digest = digest_of("material");
  f.requested_action_id = "action-install-" + consent_id;
  f.requested_action_content_digest = digest_of("action-content:" + consent_id);
  f.requested_action_precondition_revision = 4;
  f.policy_snapshot_digest = digest_of("policy");
  f.release_root_digest = digest_of("release-root");
  f.expires_at = "2026-08-03T13:00:00Z";
  return f;
}

inline runtime::ConsentChallenge make_challenge(const std::string& consent_id = "consent-1") {
  return runtime::ConsentChallenge::create(challenge_fields(consent_id));
}

inline const std::string kPrincipal = digest_of("managed-test-principal");
inline constexpr const char* kAuthenticator = "managed-test-authenticator";
inline constexpr const char* kAudience = "ctx-managed-query";

inline runtime::SignedAssertionClaims claims_for(const runtime::ConsentChallenge& challenge,
                                                 const std::string& nonce = "nonce-1") {
  runtime::SignedAssertionClaims c;
  c.challenge_digest = challenge.digest();
  c.decision = engine::Decision::kGranted;
  c.principal_digest = kPrincipal;
  c.authenticator_id = kAuthenticator;
  c.audience = kAudience;
  c.nonce = nonce;
  c.issued_at = "2026-08-03T12:00:00Z";
  c.expires_at = "2026-08-03T12:30:00Z";
  c.proof = "unsigned";
  return c;
}

// Keys and signatures made by the real tools, in a private directory.
class Signers {
 public:
  explicit Signers(const std::filesystem::path& dir) : dir_(dir) {}

  // An Ed25519 key `name` (openssl genpkey); returns its SubjectPublicKeyInfo PEM.
  std::string ed25519_key(const std::string& name) {
    must_run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", path(name)});
    must_run({"openssl", "pkey", "-in", path(name), "-pubout", "-out", path(name) + ".pub"});
    return read_file(path(name) + ".pub");
  }
  // The raw 64-byte Ed25519 signature of `bytes` under key `name`.
  std::string ed25519_sign(const std::string& name, const std::string& bytes) {
    write_file(path("message"), bytes);
    std::filesystem::remove(path("signature"));
    must_run({"openssl", "pkeyutl", "-sign", "-rawin", "-inkey", path(name), "-in",
              path("message"), "-out", path("signature")});
    return read_file(path("signature"));
  }
  // An ssh-ed25519 key `name` (ssh-keygen); returns its authorized_keys line.
  std::string ssh_key(const std::string& name) {
    must_run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path(name)});
    const std::string text = read_file(path(name) + ".pub");
    return text.substr(0, text.find('\n'));
  }
  // The armored SSH signature `ssh-keygen -Y sign -n ctx-consent` writes for `bytes`.
  std::string ssh_sign(const std::string& name, const std::string& bytes) {
    write_file(path("message"), bytes);
    std::filesystem::remove(path("message.sig"));
    must_run({"ssh-keygen", "-Y", "sign", "-f", path(name), "-n", "ctx-consent",
              path("message")});
    return read_file(path("message.sig"));
  }

 private:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

// The wire payload of `claims` signed with `proof_of(signing bytes)`.
inline std::string signed_payload(runtime::SignedAssertionClaims claims,
                                  const std::function<std::string(const std::string&)>& proof_of) {
  const std::string bytes = signing_bytes_of(claims);
  return payload_with(std::move(claims), proof_of(bytes));
}

// One byte of `bytes` flipped.
inline std::string altered(std::string bytes) {
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x01);
  return bytes;
}

// Loads the verifier module at `so` into `registry` exactly as pinned.
inline void load_verifier(::ctx::app::LoadedPlugins& registry, const plugins::PluginLoader& loader,
                          const char* so) {
  registry.add(loader.load(loader.inspect_for_pin(so)));
}

// Passes only when `fn` throws exactly `T` (not a subclass, not a base).
template <typename T, typename Fn>
::testing::AssertionResult throws_exactly(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    if (typeid(e) == typeid(T)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "threw " << typeid(e).name() << ": " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace ctx::testing

#endif  // CTX_TESTS_HOST_RUNTIME_CONSENT_CONSENT_FIXTURE_HPP_
