#include "host/store/sqlite_journal_store.hpp"

#include <exception>
#include <utility>

#include "host/store/authority_table.hpp"
#include "host/store/file_policy.hpp"
#include "host/store/journal_schema.hpp"
#include "host/store/journal_table.hpp"
#include "host/store/sqlite.hpp"

namespace ctx::store {

using engine::ActionClaim;
using engine::ClaimRequest;
using engine::EngineStoreError;
using engine::EventIdCollision;
using engine::ExecutionAuthority;
using engine::ExecutionOutcome;
using engine::InstallOutcome;
using engine::JournalRecord;
using engine::Revision;
using engine::RevisionConflict;
using engine::StreamId;

// ---- Impl: one connection, the journal table and the two authority tables on it ----

class SqliteJournalStore::Impl {
 public:
  Impl(const std::filesystem::path& path, const core::Clock& clock,
       const SqliteJournalOptions& options)
      : db_(path, Database::Mode::kReadWrite, options.busy_timeout_ms),
        clock_(clock),
        synchronous_(options.synchronous),
        journal_(db_),
        install_(db_, journal_),
        activation_(db_, journal_) {
    db_.use_wal();
    db_.exec("PRAGMA synchronous=" + std::string(core::to_string(options.synchronous)));
    db_.exec("PRAGMA foreign_keys=ON");
    prepare_journal_schema(db_);
    secure_sidecars(path);
    Transaction tx(db_, Transaction::Kind::kDeferred);
    install_.verify_all();
    activation_.verify_all();
  }

  Database& db() { return db_; }
  JournalTable& journal() { return journal_; }
  InstallAuthorityTable& install() { return install_; }
  ActivationAuthorityTable& activation() { return activation_; }

  // The trusted clock as a function (errors: EngineStoreError "trusted utc clock failed").
  std::function<core::Timestamp()> now_fn() const {
    return [this] {
      try {
        return clock_.now();
      } catch (const std::exception&) {
        throw EngineStoreError("trusted utc clock failed");
      }
    };
  }

  engine::JournalCommit append(const engine::JournalAppend& request) {
    // Validate everything that does not depend on the head before touching the file.
    JournalRecord record = engine::build_journal_record(request);
    if (request.guard) validate_guard_shape(*request.guard);

    // One write transaction: event-id lookup, head check, guard check, insert.
    Transaction tx(db_, Transaction::Kind::kImmediate);
    if (std::optional<JournalRecord> existing = journal_.by_event_id(request.event_id)) {
      if (existing->stream != request.stream ||
          existing->event_content_digest != request.event_content_digest) {
        throw EventIdCollision(request.event_id, existing->event_content_digest,
                               request.event_content_digest);
      }
      return {std::move(*existing), true};
    }
    const engine::JournalHead head = journal_.head(request.stream);
    if (head.revision != request.expected_revision) {
      throw RevisionConflict(request.expected_revision, head.revision);
    }
    engine::chain_journal_record(record, head.record_digest);

    std::optional<PendingSettlement> settlement;
    if (request.guard) {
      settlement = request.guard->authority == ExecutionAuthority::kInstall
                       ? install_.check_settlement(request.stream, *request.guard, record)
                       : activation_.check_settlement(request.stream, *request.guard, record);
    }
    journal_.insert(record, request.result_state);
    if (settlement) {
      if (request.guard->authority == ExecutionAuthority::kInstall) {
        install_.settle(*settlement, record);
      } else {
        activation_.settle(*settlement, record);
      }
    }
    tx.commit();
    return {std::move(record), false};
  }

  std::optional<JournalRecord> find(const StreamId& stream, std::string_view event_id) {
    std::optional<JournalRecord> record = journal_.by_event_id(event_id);
    if (record && record->stream != stream) {
      throw EventIdCollision(std::string(event_id), record->event_content_digest, "");
    }
    return record;
  }

  // The activated material must have been installed (applied + settled) no later than `now`.
  void require_installation_before(const StreamId& stream, const std::string& content_digest,
                                   core::Timestamp now) {
    std::vector<std::string> ids;
    {
      auto stmt = db_.cached(
          "SELECT action_id FROM engine_install_claims WHERE stream_key = ?1 AND "
          "action_content_digest = ?2");
      stmt->bind(1, stream.stream_key()).bind(2, content_digest);
      while (stmt->step()) ids.push_back(stmt->text(0));
    }
    if (ids.size() != 1) {
      throw InvalidArgument("activation material does not name exactly one install claim");
    }
    Authority install = install_.load(stream, ids.front());
    if (!install.outcome || install.outcome->outcome != InstallOutcome::kApplied ||
        !install.settlement ||
        install.settlement->outcome != SettlementOutcome(InstallOutcome::kApplied)) {
      throw InvalidArgument("activation material was not installed by a settled applied claim");
    }
    if (now < core::parse_rfc3339(install.outcome->observed_at)) {
      throw EngineStoreError("trusted utc clock moved before installation");
    }
  }

  // Runs `write` in one BEGIN IMMEDIATE and commits what it returns.
  template <typename Write>
  auto in_write(Write write) {
    Transaction tx(db_, Transaction::Kind::kImmediate);
    auto result = write();
    tx.commit();
    return result;
  }

  ActionClaim claim_activation(const ClaimRequest& request) {
    std::function<void(core::Timestamp)> lineage;
    if (request.installed_by_action_content_digest) {
      lineage = [&](core::Timestamp now) {
        require_installation_before(request.stream, *request.installed_by_action_content_digest,
                                    now);
      };
    }
    return in_write([&] { return activation_.claim(request, now_fn(), lineage); });
  }

  ActionClaim claim_install(const ClaimRequest& request) {
    return in_write([&] { return install_.claim(request, now_fn(), nullptr); });
  }

  template <typename Table>
  ExecutionOutcome record_with(Table& table, const OutcomeFacts& facts) {
    return in_write([&] { return table.record_outcome(facts, now_fn()); });
  }

  // An install outcome commit is not fsynced (WAL at synchronous NORMAL for this one
  // transaction; FULL again after): it is durable against a process crash when it returns, and
  // the receipt commit that settles it (FULL) syncs the log up to and including it. A power loss
  // between the two loses only the outcome row, which leaves the state of a crash between the
  // driver's install and the outcome commit — a claim without an outcome, which recovery
  // settles from the installer's reconcile without re-applying
  // (InstallOutcomeCrash.KillingTheProcessAfterTheDriverInstalledSettlesOnceWithoutReapplying).
  ExecutionOutcome record_install_outcome_unsynced(const OutcomeFacts& facts) {
    if (synchronous_ != Synchronous::kFull) return record_with(install_, facts);
    db_.cached("PRAGMA synchronous=NORMAL")->run();
    struct RestoreFull {
      Database& db;
      ~RestoreFull() {
        try {
          db.cached("PRAGMA synchronous=FULL")->run();
        } catch (...) {
          // Setting the pragma does no I/O; should it ever fail, stop rather than keep
          // committing unsynced.
          std::terminate();
        }
      }
    } restore{db_};
    return record_with(install_, facts);
  }

  template <typename Table>
  Authority load(Table& table, const StreamId& stream, std::string_view action_id) {
    Transaction tx(db_, Transaction::Kind::kDeferred);
    return table.load(stream, action_id);
  }

 private:
  Database db_;
  const core::Clock& clock_;
  Synchronous synchronous_;
  JournalTable journal_;
  InstallAuthorityTable install_;
  ActivationAuthorityTable activation_;
};

// ---- Public surface ----

SqliteJournalStore::SqliteJournalStore(const std::filesystem::path& path,
                                       const core::Clock& clock, SqliteJournalOptions options)
    : path_(path) {
  secure_store_file(path_);
  impl_ = std::make_unique<Impl>(path_, clock, options);
}

SqliteJournalStore::~SqliteJournalStore() = default;

engine::JournalCommit SqliteJournalStore::append(const engine::JournalAppend& request) {
  std::lock_guard lock(mutex_);
  return impl_->append(request);
}

engine::JournalHead SqliteJournalStore::head(const StreamId& stream) const {
  std::lock_guard lock(mutex_);
  return impl_->journal().head(stream);
}

std::optional<engine::JournalLatest> SqliteJournalStore::latest(const StreamId& stream) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  return impl_->journal().latest(stream);
}

std::vector<JournalRecord> SqliteJournalStore::read(const StreamId& stream,
                                                    Revision after) const {
  std::lock_guard lock(mutex_);
  if (after < 0) throw InvalidArgument("after must be >= 0");
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  return impl_->journal().read(stream, after);
}

std::optional<JournalRecord> SqliteJournalStore::find(const StreamId& stream,
                                                      std::string_view event_id) const {
  std::lock_guard lock(mutex_);
  return impl_->find(stream, event_id);
}

engine::JournalLookup SqliteJournalStore::lookup(const StreamId& stream,
                                                std::string_view event_id) const {
  std::lock_guard lock(mutex_);
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  engine::JournalLookup out{impl_->find(stream, event_id), {}};
  if (!out.existing) out.head = impl_->journal().head(stream);
  tx.commit();  // ends the read
  return out;
}

ActionClaim SqliteJournalStore::claim_install(const ClaimRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->claim_install(request);
}

ActionClaim SqliteJournalStore::claim_activation(const ClaimRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->claim_activation(request);
}

ExecutionOutcome SqliteJournalStore::record_install_outcome(
    const engine::InstallOutcomeRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->record_install_outcome_unsynced(
      OutcomeFacts{request.stream, request.action_json, request.execution_binding_digest,
                   request.verification_digest, request.observed_material_identity_digest,
                   request.outcome, request.expected_result_material_identity_digest});
}

ExecutionOutcome SqliteJournalStore::record_activation_outcome(
    const engine::ActivationOutcomeRequest& request) {
  std::lock_guard lock(mutex_);
  return impl_->record_with(
      impl_->activation(),
      OutcomeFacts{request.stream, request.action_json, request.execution_binding_digest,
                   request.verification_digest, request.observed_material_identity_digest,
                   std::nullopt, std::nullopt});
}

engine::InstallExecutionStatus SqliteJournalStore::install_execution_status(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  const Authority a = impl_->load(impl_->install(), stream, action_id);
  engine::InstallExecutionStatus status;
  if (!a.claim) return status;
  status.claimed = true;
  status.execution_binding_digest = a.claim->execution_binding_digest;
  if (a.outcome) {
    status.outcome_recorded = true;
    status.outcome = a.outcome->outcome;
    status.outcome_digest = a.outcome->outcome_digest;
    status.observed_at = a.outcome->observed_at;
  }
  status.settled = a.settlement.has_value();
  return status;
}

engine::ActivationExecutionStatus SqliteJournalStore::activation_execution_status(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  const Authority a = impl_->load(impl_->activation(), stream, action_id);
  engine::ActivationExecutionStatus status;
  if (!a.claim) return status;
  status.claimed = true;
  status.execution_binding_digest = a.claim->execution_binding_digest;
  if (a.outcome) {
    status.outcome_recorded = true;
    status.outcome_digest = a.outcome->outcome_digest;
    status.observed_at = a.outcome->observed_at;
  }
  status.settled = a.settlement.has_value();
  return status;
}

std::optional<ActionClaim> SqliteJournalStore::find_install_claim(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  return impl_->load(impl_->install(), stream, action_id).claim;
}

std::optional<ExecutionOutcome> SqliteJournalStore::find_install_outcome(
    const StreamId& stream, std::string_view action_id) const {
  std::lock_guard lock(mutex_);
  return impl_->load(impl_->install(), stream, action_id).outcome;
}

void SqliteJournalStore::verify(engine::StreamReplayer* replayer) const {
  std::lock_guard lock(mutex_);
  // Everything from scratch: no record verified earlier in this process is taken on trust.
  const engine::FreshJournalVerification fresh;
  Transaction tx(impl_->db(), Transaction::Kind::kDeferred);
  impl_->journal().verify_all(replayer);
  impl_->install().verify_all();
  impl_->activation().verify_all();
}

}  // namespace ctx::store
