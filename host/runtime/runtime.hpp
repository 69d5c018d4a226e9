// The ctx runtime package: the one header a host includes for the managed query service and its
// public contract — requests, results (ManagedDesiredSetRequest / Result,
// ManagedConsentResolutionResult), the typed service errors, the consent broker, install policy
// store, verifier registry and install actuators the factory accepts. Nothing else is exported.
#ifndef CTX_HOST_RUNTIME_RUNTIME_HPP_
#define CTX_HOST_RUNTIME_RUNTIME_HPP_

#include "host/runtime/consent/consent_broker.hpp"
#include "host/runtime/consent/install_policy_store.hpp"
#include "host/runtime/consent/verifier_registry.hpp"
#include "host/runtime/service/errors.hpp"
#include "host/runtime/service/install_actuator.hpp"
#include "host/runtime/service/managed_service.hpp"

#endif  // CTX_HOST_RUNTIME_RUNTIME_HPP_
