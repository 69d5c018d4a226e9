// The managed query store as the runtime names it: the port engine::ManagedQueryStore, its
// records and reference predicates (host/engine/managed_query_store.hpp). The runtime takes the
// port; host/app opens the SQLite one (store::open_managed_query_store) and tests use
// testing::MemManagedQueryStore.
#ifndef CTX_HOST_RUNTIME_SERVICE_QUERY_STORE_HPP_
#define CTX_HOST_RUNTIME_SERVICE_QUERY_STORE_HPP_

#include "host/engine/managed_query_store.hpp"
#include "host/runtime/service/errors.hpp"

namespace ctx::runtime {

using engine::desired_stream_identity_digest;
using engine::is_desired_set_ref;
using engine::is_query_ref;
using engine::kManagedQueryStoreSchema;
using engine::ManagedDesiredSetRecord;
using engine::ManagedQueryRecord;
using engine::ManagedQueryStore;

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_SERVICE_QUERY_STORE_HPP_
