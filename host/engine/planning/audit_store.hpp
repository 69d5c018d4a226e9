// The benefit audit store port (spec §8.7): durably binds a validated BenefitSelectionResult to
// its digest before a plan referencing it is returned; host/store/benefit_audit_store has it.
#ifndef CTX_HOST_ENGINE_PLANNING_AUDIT_STORE_HPP_
#define CTX_HOST_ENGINE_PLANNING_AUDIT_STORE_HPP_

#include <string>
#include <string_view>

#include "host/engine/planning/benefit.hpp"

namespace ctx::engine::planning {

class BenefitAuditStore {
 public:
  virtual ~BenefitAuditStore() = default;
  // Records `result` once under result.result_digest() and returns that digest; storing the
  // identical result again is a no-op returning the same digest.
  // Errors: BenefitAuditStoreUnavailable (operational; the plan degrades to "planner-failed"),
  // BenefitAuditDigestCollision (digest bound to other bytes), BenefitAuditCorruption.
  virtual std::string store(const BenefitSelectionResult& result) = 0;
};

}  // namespace ctx::engine::planning

#endif  // CTX_HOST_ENGINE_PLANNING_AUDIT_STORE_HPP_
