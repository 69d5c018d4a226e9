// SqliteConsentStore: the engine::ConsentStore port on one SQLite file (PRAGMA user_version 1):
// the tables consent_broker_identity (one row), consent_challenges and consent_assertion_nonces,
// every row HMAC-SHA256 authenticated under the 32-byte installation key (store::KeyedRows). A row
// that fails authentication is ConsentBrokerCorruption ("consent broker <what> authentication
// failed") and the transaction rolls back. A transaction is one BEGIN IMMEDIATE, so stores on the
// same file in several threads or processes serialize. The file is WAL at synchronous FULL (a
// commit is durable when it returns) except for kRelaxed transactions (synchronous NORMAL for that
// one commit). Thread-safe: a transaction holds the store's one connection until it ends.
#ifndef CTX_HOST_STORE_SQLITE_CONSENT_STORE_HPP_
#define CTX_HOST_STORE_SQLITE_CONSENT_STORE_HPP_

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "host/engine/consent_store.hpp"
#include "host/store/keyed_rows.hpp"

namespace ctx::store {

class Database;

class SqliteConsentStore final : public engine::ConsentStore {
 public:
  // Opens or creates the store at absolute `path` (file 0600 in a 0700 directory owned by this
  // user) and brings its schema to the current version. `installation_key` is exactly 32 bytes.
  // The identity row is read (and its key checked) by the first transaction.
  // Errors: InvalidArgument (path, key); EngineStoreError (path refused); StoreBusy;
  // NewerSchemaVersion; JournalCorruption (not a database, or not the consent schema).
  SqliteConsentStore(std::filesystem::path path, std::string_view installation_key,
                     int busy_timeout_ms = 30000);
  ~SqliteConsentStore() override;

  const std::filesystem::path& path() const noexcept override { return path_; }
  std::unique_ptr<engine::ConsentStoreTransaction> begin(
      engine::ConsentCommitSync sync = engine::ConsentCommitSync::kDurable) override;

 private:
  class Txn;
  friend class Txn;

  std::filesystem::path path_;
  KeyedRows rows_;  // the installation key
  std::string key_check_;
  std::mutex mutex_;              // held by the open transaction
  std::unique_ptr<Database> db_;  // GUARDED_BY(mutex_)
  // challenge_id -> image of the row this store last wrote or authenticated (its tag computed or
  // checked here over exactly those values): a read of that same image skips the second HMAC.
  // GUARDED_BY(mutex_).
  std::unordered_map<std::string, std::string> verified_rows_;
  void remember_verified(const std::string& challenge_id, std::string image);
};

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_SQLITE_CONSENT_STORE_HPP_
