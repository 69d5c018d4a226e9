#include "host/runtime/consent/verifier_registry.hpp"

#include <ctx/support/text.hpp>

#include "host/core/crypto.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/consent/private_file.hpp"

namespace ctx::runtime {
namespace {

constexpr std::string_view kWhat = "consent verifier registry";

// TOKEN: [A-Za-z0-9][A-Za-z0-9._:@-]{0,127}, as the assertion codec spells it.
using support::is_token;

void validate_key(const VerifierKey& key) {
  if (!is_token(key.audience)) throw InvalidArgument("verifier audience must be a token");
  if (!is_token(key.authenticator_id)) {
    throw InvalidArgument("verifier authenticator id must be a token");
  }
  if (!core::is_sha256_hex(key.principal_digest)) {
    throw InvalidArgument("verifier principal digest must be 64 lower-case hex");
  }
}

const std::string& string_at(const core::Json& json, const char* key) {
  const auto it = json.find(key);
  if (it == json.end() || !it->is_string()) {
    throw InvalidArgument(std::string("verifier registration field ") + key);
  }
  return it->get_ref<const std::string&>();
}

}  // namespace

VerifierKey verifier_key_of(const SignedAssertion& assertion) {
  return {assertion.audience(), assertion.authenticator_id(), assertion.principal_digest()};
}

core::Json VerifierRegistration::to_json() const {
  return core::Json{{"audience", key.audience},
                    {"authenticator_id", key.authenticator_id},
                    {"config", config},
                    {"identity_digest", identity_digest},
                    {"plugin_id", plugin_id},
                    {"principal_digest", key.principal_digest}};
}

VerifierRegistration VerifierRegistration::from_json(const core::Json& json) {
  if (!json.is_object() || json.size() != 6) {
    throw InvalidArgument("verifier registration key set");
  }
  VerifierRegistration r;
  r.key = {string_at(json, "audience"), string_at(json, "authenticator_id"),
           string_at(json, "principal_digest")};
  r.plugin_id = string_at(json, "plugin_id");
  r.identity_digest = string_at(json, "identity_digest");
  const auto config = json.find("config");
  if (config == json.end() || !config->is_object()) {
    throw InvalidArgument("verifier registration config must be an object");
  }
  r.config = *config;
  validate_key(r.key);
  if (!engine::is_plugin_id(r.plugin_id)) {
    throw InvalidArgument("verifier registration plugin id");
  }
  if (!core::is_sha256_hex(r.identity_digest)) {
    throw InvalidArgument("verifier registration identity digest");
  }
  return r;
}

bool PinnedVerifier::verify(const SignedAssertion& assertion, std::string_view wire_payload,
                            std::string_view signing_bytes) const noexcept {
  if (verifier_key_of(assertion) != key_) return false;
  if (signing_bytes != assertion.signing_bytes()) return false;
  try {
    if (port_->identity_digest() != identity_digest_) return false;
    return port_->verify(wire_payload, signing_bytes) == engine::Verdict::kAccepted;
  } catch (...) {
    return false;  // a malformed proof (kInvalidArgument) or a failing plugin: not verified
  }
}

TrustedVerifierRegistry::TrustedVerifierRegistry(std::filesystem::path state_dir,
                                                 const PinnedPlugins& plugins, core::StateFs& fs)
    : file_(std::move(state_dir) / kVerifierRegistryFileName), plugins_(plugins), fs_(fs) {
  const auto bytes = read_private_file(file_, kMaxVerifierRegistryBytes, kWhat);
  if (!bytes) return;
  try {
    const core::Json json = core::parse_canonical_json(*bytes);
    if (!json.is_object() || json.size() != 2 || !json.contains("schema") ||
        json.at("schema") != kVerifierRegistrySchema || !json.contains("verifiers") ||
        !json.at("verifiers").is_array() ||
        json.at("verifiers").size() > kMaxVerifierRegistrations) {
      throw InvalidArgument("registry shape");
    }
    for (const core::Json& entry : json.at("verifiers")) {
      VerifierRegistration r = VerifierRegistration::from_json(entry);
      if (!entries_.empty() && !(entries_.rbegin()->first < r.key)) {
        throw InvalidArgument("registrations out of order or repeated");
      }
      VerifierKey key = r.key;
      entries_.emplace(std::move(key), std::move(r));
    }
  } catch (const InvalidArgument&) {
    throw VerifierRegistryCorruption("consent verifier registry is corrupt");
  }
}

void TrustedVerifierRegistry::persist_locked() const {
  core::Json list = core::Json::array();
  for (const auto& [key, r] : entries_) list.push_back(r.to_json());
  const core::Json json{{"schema", kVerifierRegistrySchema}, {"verifiers", std::move(list)}};
  const std::string bytes = core::canonical_json(json);
  if (bytes.size() > kMaxVerifierRegistryBytes) {
    throw InvalidArgument("consent verifier registry would exceed its size limit");
  }
  ensure_private_dir(file_.parent_path(), kWhat, DirDurability::kDurable, fs_);
  write_private_file(file_, bytes, kWhat, fs_);
}

void TrustedVerifierRegistry::add(const VerifierKey& key, std::string_view plugin_id,
                                  const core::Json& config) {
  validate_key(key);
  if (!config.is_object()) throw InvalidArgument("verifier config must be an object");
  // Instantiating checks the configuration with the plugin itself before anything is stored.
  const auto probe = plugins_.verifier(plugin_id, core::canonical_json(config));
  VerifierRegistration r{key, std::string(plugin_id), probe->identity_digest(), config};
  std::lock_guard lock(mutex_);
  if (entries_.contains(key)) throw InvalidArgument("verifier key is already registered");
  if (entries_.size() >= kMaxVerifierRegistrations) {
    throw InvalidArgument("consent verifier registry is full");
  }
  entries_.emplace(key, std::move(r));
  try {
    persist_locked();
  } catch (...) {
    entries_.erase(key);
    throw;
  }
}

void TrustedVerifierRegistry::remove(const std::vector<VerifierKey>& keys) {
  std::lock_guard lock(mutex_);
  std::map<VerifierKey, VerifierRegistration> removed;
  for (const VerifierKey& key : keys) {
    const auto entry = entries_.find(key);
    if (entry == entries_.end() && !removed.contains(key)) {
      for (auto& [k, r] : removed) entries_.emplace(k, std::move(r));
      throw UnknownHumanDecisionVerifier("no trusted verifier for this human decision identity");
    }
    if (entry != entries_.end()) {
      removed.emplace(entry->first, std::move(entry->second));
      entries_.erase(entry);
    }
  }
  try {
    persist_locked();
  } catch (...) {
    for (auto& [k, r] : removed) entries_.emplace(k, std::move(r));
    throw;
  }
  for (const auto& [k, r] : removed) loaded_.erase(k);
}

std::shared_ptr<const PinnedVerifier> TrustedVerifierRegistry::resolve(const VerifierKey& key) {
  std::lock_guard lock(mutex_);
  const auto entry = entries_.find(key);
  if (entry == entries_.end()) {
    throw UnknownHumanDecisionVerifier("no trusted verifier for this human decision identity");
  }
  const VerifierRegistration& r = entry->second;
  const auto loaded = plugins_.verifier_identity(r.plugin_id);
  if (!loaded || *loaded != r.identity_digest) {
    loaded_.erase(key);
    throw VerifierPinMismatch("verifier pin mismatch: the pinned verifier plugin is not loaded");
  }
  const auto cached = loaded_.find(key);
  if (cached != loaded_.end()) return cached->second;
  auto port = plugins_.verifier(r.plugin_id, core::canonical_json(r.config));
  if (port->identity_digest() != r.identity_digest) {
    throw VerifierPinMismatch("verifier pin mismatch: the loaded verifier has another identity");
  }
  auto pinned = std::make_shared<const PinnedVerifier>(key, r.identity_digest, std::move(port));
  loaded_.emplace(key, pinned);
  return pinned;
}

std::vector<VerifierRegistration> TrustedVerifierRegistry::registrations() const {
  std::lock_guard lock(mutex_);
  std::vector<VerifierRegistration> out;
  for (const auto& [key, r] : entries_) out.push_back(r);
  return out;
}

}  // namespace ctx::runtime
