// SQLite benefit audit store (spec §8.7): one WITHOUT ROWID table benefit_audit_results, rows
// written once and never changed, every read revalidated. File 0600 in a 0700 directory, WAL,
// synchronous FULL, trusted_schema OFF. Thread-safe (calls serialize on one connection); several
// processes may share the file (SQLite locking, busy timeout). Schema: PRAGMA user_version 1;
// a file from a newer schema is BenefitAuditStoreUnavailable ("newer schema version N").
#ifndef CTX_HOST_STORE_BENEFIT_AUDIT_STORE_HPP_
#define CTX_HOST_STORE_BENEFIT_AUDIT_STORE_HPP_

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "host/engine/planning/audit_store.hpp"

namespace ctx::store {

class Database;

class SqliteBenefitAuditStore final : public engine::planning::BenefitAuditStore {
 public:
  // Creates the file (0600; the parent is created or tightened to 0700) or opens an existing one
  // and requires its schema to be exactly the one table.
  // Errors: BenefitAuditStoreUnavailable (path, permissions, open, lock),
  // BenefitAuditCorruption (not a database, unexpected schema objects).
  static std::unique_ptr<SqliteBenefitAuditStore> open(const std::filesystem::path& path);
  ~SqliteBenefitAuditStore() override;
  SqliteBenefitAuditStore(const SqliteBenefitAuditStore&) = delete;
  SqliteBenefitAuditStore& operator=(const SqliteBenefitAuditStore&) = delete;

  // See BenefitAuditStore::store. An existing row is re-verified (bytes, length, content digest,
  // decoded result) before the digest is acknowledged.
  std::string store(const engine::planning::BenefitSelectionResult& result) override;

  // Loads and fully revalidates one result. Errors: NotFound, BenefitAuditCorruption,
  // BenefitAuditStoreUnavailable.
  engine::planning::BenefitSelectionResult load(std::string_view result_digest) const;

 private:
  SqliteBenefitAuditStore() = default;

  std::unique_ptr<Database> db_;
  mutable std::mutex mutex_;
};

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_BENEFIT_AUDIT_STORE_HPP_
