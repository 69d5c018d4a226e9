#include "host/engine/ports/installer_port.hpp"

#include <limits>
#include <string>
#include <utility>

#include <ctx/sdk/error.hpp>

#include "host/core/error.hpp"
#include "host/engine/lexical.hpp"

namespace ctx::engine {
namespace {

template <typename T>
T unsigned_field(const core::Json& value, const char* name) {
  const auto it = value.find(name);
  if (it == value.end() || !it->is_number_unsigned() ||
      it->get<std::uint64_t>() > std::numeric_limits<T>::max()) {
    throw InvalidArgument(std::string("target identity field \"") + name +
                          "\" must be an unsigned integer");
  }
  return static_cast<T>(it->get<std::uint64_t>());
}

std::optional<std::string> digest_field(const core::Json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || !it->is_string() || !is_digest(it->get<std::string>())) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

ActivationObservation indeterminate(std::string reason) {
  return ActivationObservation{ActivationResult::kIndeterminate, std::nullopt, std::nullopt,
                               std::move(reason)};
}

ActivationObservation failed(std::string reason) {
  return ActivationObservation{ActivationResult::kFailed, std::nullopt, std::nullopt,
                               std::move(reason)};
}

// Applied, with the material digest under `material_key` and "verification_digest" of `object`;
// indeterminate when either is missing or not a digest.
ActivationObservation applied_from(const core::Json& object, const char* material_key) {
  auto observed = digest_field(object, material_key);
  auto verification = digest_field(object, "verification_digest");
  if (!observed || !verification) {
    return indeterminate("installer reply lacks its material or verification digest");
  }
  return {ActivationResult::kApplied, std::move(observed), std::move(verification), ""};
}

// The enum string field `key` of `object` spells, or nullopt (absent, not a string, unknown).
template <typename E>
std::optional<E> enum_field(const core::Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return find_enum<E>(it->get_ref<const std::string&>());
}

// An activate reply: {"outcome", "observed_material_identity_digest", "verification_digest"}.
ActivationObservation from_activate_reply(const core::Json& reply) {
  if (!reply.is_object() || !reply.contains("outcome") || !reply["outcome"].is_string()) {
    return indeterminate("installer reply has no outcome");
  }
  const auto outcome = enum_field<Outcome>(reply, "outcome");
  if (outcome == Outcome::kFailed) return failed("installer reported the activation failed");
  if (outcome != Outcome::kApplied) {
    return indeterminate("installer reported an indeterminate activation");
  }
  return applied_from(reply, "observed_material_identity_digest");
}

// One capability of a reconcile reply: {"capability_id", "active",
// "active_material_identity_digest", "verification_digest", ...}.
ActivationObservation from_reconcile_reply(const core::Json& reply,
                                           const ActivationRequest& request) {
  if (!reply.is_object() || !reply.contains("capabilities") || !reply["capabilities"].is_array()) {
    return indeterminate("installer reconcile reply has no capabilities");
  }
  for (const core::Json& item : reply["capabilities"]) {
    if (!item.is_object() || item.value("capability_id", core::Json()) !=
                                 request.material.capability_id()) {
      continue;
    }
    const auto active = item.find("active");
    if (active == item.end() || !active->is_boolean()) {
      return indeterminate("installer reconcile reply has no active flag");
    }
    // An installer that cannot tell (a tampered tree, a slot it did not create) says so.
    if (enum_field<SlotState>(item, "activation_state") == SlotState::kIndeterminate) {
      return indeterminate("installer cannot tell whether the material is active");
    }
    if (!active->get<bool>()) return failed("installer reports the material is not active");
    return applied_from(item, "active_material_identity_digest");
  }
  return indeterminate("installer reconcile reply does not list the capability");
}

}  // namespace

core::Json TargetIdentity::to_json() const {
  return core::Json{{"device", device}, {"inode", inode}, {"mode", mode},
                    {"owner", owner},   {"path", path}};
}

std::string TargetIdentity::digest() const { return core::canonical_digest(to_json()); }

TargetIdentity TargetIdentity::from_json(const core::Json& value) {
  if (!value.is_object()) throw InvalidArgument("target identity must be a json object");
  TargetIdentity identity;
  identity.device = unsigned_field<std::uint64_t>(value, "device");
  identity.inode = unsigned_field<std::uint64_t>(value, "inode");
  identity.owner = unsigned_field<std::uint32_t>(value, "owner");
  identity.mode = unsigned_field<std::uint32_t>(value, "mode");
  const auto path = value.find("path");
  if (path == value.end() || !path->is_string() || path->get<std::string>().empty()) {
    throw InvalidArgument("target identity field \"path\" must be a non-empty string");
  }
  identity.path = path->get<std::string>();
  return identity;
}

core::Json ActivationRequest::to_json() const {
  return core::Json{{"capability_id", material.capability_id()},
                    {"content_bytes", material.content_bytes()},
                    {"content_sha256", material.content_sha256()},
                    {"kind", material.kind()},
                    {"material_identity_digest", material.identity_digest()}};
}

InstallerActivation::InstallerActivation(std::shared_ptr<InstallerPort> installer)
    : installer_(std::move(installer)) {
  CTX_CHECK(installer_ != nullptr);
}

ActivationObservation InstallerActivation::activate(const ActivationRequest& request) {
  return from_activate_reply(installer_->activate(request.to_json()));
}

ActivationObservation InstallerActivation::deactivate(const ActivationRequest& request) {
  const core::Json reply = installer_->deactivate(request.to_json());
  const auto outcome = reply.is_object() ? enum_field<Outcome>(reply, "outcome") : std::nullopt;
  if (outcome == Outcome::kApplied) {
    return ActivationObservation{ActivationResult::kApplied, std::nullopt, std::nullopt, ""};
  }
  if (outcome == Outcome::kFailed) {
    return failed("installer reported the deactivation failed");
  }
  return indeterminate("installer reported an indeterminate deactivation");
}

ActivationObservation InstallerActivation::reconcile(const ActivationRequest& request) {
  const core::Json query = {{"capabilities", core::Json::array({request.to_json()})}};
  return from_reconcile_reply(installer_->reconcile(query), request);
}

}  // namespace ctx::engine
