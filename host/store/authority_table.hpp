// One implementation of the one-use authority tables (spec §6.4–6.5) — claim, outcome and
// settlement rows of one action — shared by install and activation through a traits type
// (InstallAuthority, ActivationAuthority: table SQL, digests, error vocabulary). Rows are
// written once (no read-back) and re-verified against their journal anchors whenever read.
// Every call runs inside the caller's transaction; used by one thread at a time.
#ifndef CTX_HOST_STORE_AUTHORITY_TABLE_HPP_
#define CTX_HOST_STORE_AUTHORITY_TABLE_HPP_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "host/core/time.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/journal_store.hpp"

namespace ctx::store {

class Database;
class JournalTable;

// What a settlement row's outcome column holds: the install outcome (stored as its
// kInstallOutcomeStrings spelling, "applied"/"failed") or the activation outcome digest.
using SettlementOutcome = std::variant<engine::InstallOutcome, std::string>;

// The stored text of `outcome` (the install outcome's one spelling, or the digest itself).
std::string settlement_outcome_text(const SettlementOutcome& outcome);

// The stored settlement row of one action, its outcome column parsed by the authority's traits.
struct SettlementRow {
  std::string action_content_digest;
  std::string claim_digest;
  SettlementOutcome outcome;
  std::string receipt_event_id;
  std::string receipt_event_content_digest;
  std::string receipt_record_digest;
  std::string settlement_digest;
};

// The verified authority chain of one action.
struct Authority {
  std::optional<engine::ActionClaim> claim;
  std::optional<engine::ExecutionOutcome> outcome;
  std::optional<SettlementRow> settlement;
};

// What an outcome records: a view of the caller's request (which outlives the call) plus the
// install-only parts (outcome kind, expected material), which activation leaves empty.
struct OutcomeFacts {
  const engine::StreamId& stream;
  const std::string& action_json;
  const std::string& execution_binding_digest;
  const std::string& verification_digest;
  std::optional<std::string> observed_material_identity_digest;
  std::optional<engine::InstallOutcome> outcome;
  std::optional<std::string> expected_result_material_identity_digest;
};

// A guard checked by check_settlement, to be written by settle() after the record insert.
struct PendingSettlement {
  engine::ActionClaim claim;
  SettlementOutcome outcome;
};

template <typename Traits>
class AuthorityTable {
 public:
  AuthorityTable(Database& db, JournalTable& journal) noexcept : db_(db), journal_(journal) {}

  // Loads and verifies one action's chain. Errors: JournalCorruption.
  Authority load(const engine::StreamId& stream, std::string_view action_id);

  // Claims the action of `request` at trusted time `trusted_now()` (read after the journal
  // checks); `before_insert(now)` runs after every other check (activation: the installation
  // lineage). Errors: as ClaimStore::claim_*.
  engine::ActionClaim claim(const engine::ClaimRequest& request,
                            const std::function<core::Timestamp()>& trusted_now,
                            const std::function<void(core::Timestamp)>& before_insert);

  // Records (or returns the identical prior) outcome. Errors: as ClaimStore::record_*_outcome.
  engine::ExecutionOutcome record_outcome(const OutcomeFacts& facts,
                                          const std::function<core::Timestamp()>& now);

  // Checks `guard` against the action's chain for `receipt` (the record about to be written).
  // Returns the settlement to write, or nullopt for an expiry of an unclaimed action.
  std::optional<PendingSettlement> check_settlement(const engine::StreamId& stream,
                                                    const engine::SettlementGuard& guard,
                                                    const engine::JournalRecord& receipt);
  void settle(const PendingSettlement& settlement, const engine::JournalRecord& receipt);

  // Re-verifies every row of the three tables. Errors: JournalCorruption.
  void verify_all();

 private:
  void verify_claim(const engine::ActionClaim& claim);
  void verify_outcome(const engine::ExecutionOutcome& outcome, const engine::ActionClaim& claim);
  void verify_settlement(const SettlementRow& row, const engine::ActionClaim& claim,
                         const std::optional<engine::ExecutionOutcome>& outcome);

  Database& db_;
  JournalTable& journal_;
};

struct InstallAuthority;
struct ActivationAuthority;
extern template class AuthorityTable<InstallAuthority>;
extern template class AuthorityTable<ActivationAuthority>;
using InstallAuthorityTable = AuthorityTable<InstallAuthority>;
using ActivationAuthorityTable = AuthorityTable<ActivationAuthority>;

// Validates the request-independent shape of a settlement guard. Errors: InvalidArgument.
void validate_guard_shape(const engine::SettlementGuard& guard);

}  // namespace ctx::store

#endif  // CTX_HOST_STORE_AUTHORITY_TABLE_HPP_
