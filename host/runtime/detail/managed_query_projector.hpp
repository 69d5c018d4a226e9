// Internal: the only code allowed to construct the sealed managed-query results (the projection
// functions and EngineComposition). Not part of the runtime's public surface.
#ifndef CTX_HOST_RUNTIME_DETAIL_MANAGED_QUERY_PROJECTOR_HPP_
#define CTX_HOST_RUNTIME_DETAIL_MANAGED_QUERY_PROJECTOR_HPP_

#include <cstdint>
#include <string>

#include "host/runtime/managed_query.hpp"

namespace ctx::runtime {

class ManagedQueryProjector {
 public:
  // Projects `committed` as the plan of the head (journal_revision, journal_record_digest).
  // Errors: ManagedQueryError when a digest, the revision or a row's authority is invalid.
  static PreparedManagedQuery prepared(const engine::CommittedPlanV3& committed,
                                       std::int64_t journal_revision,
                                       const std::string& journal_record_digest);
  static ManagedAdvanceResult advance(PreparedManagedQuery prepared,
                                      engine::Transition transition);

 private:
  static ManagedCapabilitySelection selection(const engine::PlanCapabilityV3& row);
};

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_DETAIL_MANAGED_QUERY_PROJECTOR_HPP_
