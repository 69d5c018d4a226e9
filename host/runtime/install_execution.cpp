#include "host/runtime/install_execution.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctx/sdk/skill_tree.hpp>
#include <functional>
#include <map>
#include <system_error>
#include <utility>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/engine/claim_store.hpp"
#include "host/engine/identities.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/activation_execution.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "host/runtime/crash_point.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

constexpr int kSettlementAttempts = 3;
constexpr std::chrono::milliseconds kExecutionLockTimeout{30'000};

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int written =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

// The tree material of `files` whose top-level `top_file` is required (SKILL.md for a skill,
// AGENT.md for an agent's one-file tree, ctx/sdk/skill_tree.hpp), as hashed now.
// Errors: as tree_material_of.
TreeMaterialText tree_material_with(const std::vector<InstallBodyFile>& files,
                                    std::string_view top_file) {
  std::vector<sdk::TreeFile> tree;
  tree.reserve(files.size());
  std::uint64_t total = 0;
  for (const auto& file : files) {
    total += file.bytes.size();
    if (total > kMaxInstallTreeBytes) throw InvalidArgument("skill tree exceeds the install cap");
    tree.push_back({file.path, file.bytes.size(), core::sha256_hex(file.bytes)});
  }
  TreeMaterialText out;
  out.manifest = sdk::tree_manifest_text(tree, top_file);
  out.root = sdk::tree_root_text(tree, core::sha256_hex(out.manifest));
  return out;
}

// The tree material of a body of `kind` (an agent's tree is its one AGENT.md), or nullopt when
// the files are not such a tree within the install cap.
std::optional<TreeMaterialText> verified_tree_of(const std::vector<InstallBodyFile>& files,
                                                 engine::CapabilityKind kind) {
  try {
    if (kind == engine::CapabilityKind::kAgent) {
      if (files.size() != 1) return std::nullopt;
      return tree_material_with(files, sdk::kAgentFile);
    }
    return tree_material_with(files, sdk::kSkillFile);
  } catch (const InvalidArgument&) {
    return std::nullopt;
  }
}

// A verified tree body written below <journal dir>/install-staging/tree-<pid>-XXXXXX (0700
// directories, 0400 files, O_EXCL) for one driver install call, removed when this is destroyed.
// Used only for an installer without install_from_source (ABI minor 0). A process that dies
// leaves its directory behind; every tree install sweeps directories whose process is gone. Nothing here is fsynced: the installer verifies what it reads from this copy
// and fsyncs its own, and nothing reads a copy after a crash (recovery of a claimed install asks
// the installer's reconcile; a new install stages a fresh copy) — InstallStagingCrash.*.
// Errors: UnsafeStateFile (the staging directory is not private); SystemError when the operating
// system refuses.
class StagedTree {
 public:
  StagedTree(const std::filesystem::path& journal_path, const std::vector<InstallBodyFile>& files) {
    const std::filesystem::path parent = parent_of(journal_path);
    // Scratch: nothing durable refers to it (the installer copies and fsyncs what it publishes),
    // and a crash that loses it only loses a staging copy the next install writes again.
    ensure_private_dir(parent, "install staging directory", DirDurability::kScratch);
    sweep(parent);
    std::string pattern = (parent / ("tree-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw SystemError("install staging: cannot create a staging tree");
    }
    dir_ = pattern;
    for (const auto& file : files) write(file);
  }
  ~StagedTree() { remove(dir_); }
  StagedTree(const StagedTree&) = delete;
  StagedTree& operator=(const StagedTree&) = delete;

  const std::filesystem::path& dir() const noexcept { return dir_; }

  // Where the staging trees of `journal_path` live.
  static std::filesystem::path parent_of(const std::filesystem::path& journal_path) {
    return journal_path.parent_path() / "install-staging";
  }

  // Removes staging trees of processes that no longer exist (none when `parent` is absent).
  static void sweep(const std::filesystem::path& parent) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(parent, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.rfind("tree-", 0) != 0) continue;
      const std::size_t dash = name.find('-', 5);
      if (dash == std::string::npos) continue;
      try {
        const long pid = std::stol(name.substr(5, dash - 5));
        if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
          remove(it->path());
        }
      } catch (const std::exception&) {
      }
    }
  }

 private:
  static void remove(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  // `file.path` is a verified tree path (no "..", no absolute or hidden component).
  void write(const InstallBodyFile& file) {
    for (std::size_t slash = file.path.find('/'); slash != std::string::npos;
         slash = file.path.find('/', slash + 1)) {
      const std::filesystem::path sub = dir_ / file.path.substr(0, slash);
      if (::mkdir(sub.c_str(), 0700) != 0 && errno != EEXIST) {
        throw SystemError("install staging: cannot create a directory");
      }
    }
    const std::filesystem::path path = dir_ / file.path;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
    if (fd < 0) throw SystemError("install staging: cannot create a file");
    std::size_t done = 0;
    while (done < file.bytes.size()) {
      const ssize_t n = ::write(fd, file.bytes.data() + done, file.bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        throw SystemError("install staging: write failed");
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) throw SystemError("install staging: close failed");
  }

  std::filesystem::path dir_;
};

const engine::InstallPlanDescriptor& descriptor_of(const engine::PlanCapabilityV3& selection) {
  if (!selection.is_install() || !selection.install_descriptor()) {
    throw InstallExecutionError("install execution requires a selection with install authority");
  }
  return *selection.install_descriptor();
}

// The resolved driver of `descriptor`, or "no physical installation actuator".
std::shared_ptr<engine::InstallerPort> resolve_driver(
    const InstallActuator* actuator, const engine::InstallPlanDescriptor& descriptor) {
  if (actuator == nullptr || !actuator->installers) {
    throw InstallExecutionError("composition has no physical installation actuator");
  }
  auto driver = actuator->installers->resolve(descriptor.installer_id(), descriptor.kind());
  if (!driver) {
    throw InstallExecutionError(
        "composition has no physical installation actuator for the descriptor's installer");
  }
  return driver;
}

std::shared_ptr<engine::InstallerPort> resolve_driver(const InstallActuator* actuator,
                                                      const engine::PlanCapabilityV3& selection) {
  return resolve_driver(actuator, descriptor_of(selection));
}

engine::InstallExecutionBinding binding_of(const InstallActuator& actuator,
                                           const engine::InstallPlanDescriptor& descriptor,
                                           engine::InstallerPort& driver) {
  return install_binding_of(descriptor, driver, actuator.host_identity_digest);
}

engine::InstallExecutionBinding binding_of(const InstallActuator& actuator,
                                           const engine::PlanCapabilityV3& selection,
                                           engine::InstallerPort& driver) {
  return binding_of(actuator, descriptor_of(selection), driver);
}

// Re-resolves the driver and requires it to be exactly the captured one: another plugin
// identity → "captured actuator"; another install root → "root changed". Nothing is claimed or
// mutated before this returns.
std::shared_ptr<engine::InstallerPort> require_captured(
    const InstallActuator* actuator, const engine::PlanCapabilityV3& selection,
    const engine::InstallExecutionBinding& captured) {
  auto driver = resolve_driver(actuator, selection);
  const auto current = binding_of(*actuator, selection, *driver);
  if (current.driver_id() != captured.driver_id() ||
      current.driver_digest() != captured.driver_digest() ||
      current.host_identity_digest() != captured.host_identity_digest()) {
    throw InstallExecutionError(
        "installer driver is no longer the captured actuator of this install authority");
  }
  if (current.target_identity_digest() != captured.target_identity_digest()) {
    throw InstallExecutionError("install target root changed after the captured binding");
  }
  return driver;
}

engine::MaterialIdentity result_material(const engine::HostAction& action,
                                         const engine::PlanCapabilityV3& selection) {
  if (action.install_payload() == nullptr) {
    throw InstallExecutionError("execution requires an exact schema-v3 install action");
  }
  if (action.entity_id() != std::optional<std::string>(selection.capability_id())) {
    throw InstallExecutionError("install action does not belong to its selection");
  }
  return action.install_payload()->result_material;
}

// What the driver observed for one install.
struct Observation {
  enum class State { kInstalled, kAbsent, kIndeterminate } state = State::kIndeterminate;
  std::optional<std::string> installer_verification_digest;
};

// The driver's reconcile answer for exactly `material`: installed, absent or indeterminate.
Observation reconcile(engine::InstallerPort& driver, const engine::MaterialIdentity& material) {
  Observation out;
  try {
    const Json reply = driver.reconcile(
        {{"capabilities",
          Json::array({{{"capability_id", material.capability_id()},
                        {"content_sha256", material.content_sha256()}}})}});
    const auto list = reply.find("capabilities");
    if (list == reply.end() || !list->is_array() || list->size() != 1) return out;
    const Json& entry = list->front();
    if (!entry.is_object() || entry.value("capability_id", Json()) != material.capability_id()) {
      return out;
    }
    const auto installed = entry.find("installed");
    if (installed == entry.end() || !installed->is_boolean()) return out;
    out.state = installed->get<bool>() ? Observation::State::kInstalled
                                       : Observation::State::kAbsent;
  } catch (const Error&) {
    out.state = Observation::State::kIndeterminate;
  } catch (const std::exception&) {
    out.state = Observation::State::kIndeterminate;
  }
  return out;
}

// Applies once (only for a claim this call created). An applied reply naming exactly the
// authorised material is the observation; a failed one, and every call that did not apply
// (recovery of an earlier claim), asks the driver's reconcile what is on disk. A body that
// cannot be loaded or verified, or an install the driver could not complete, leaves the outcome
// indeterminate for this call: recovery reconciles and never re-applies.
// A tree body (the root its files imply against the authorised root text: every file against
// its manifest entry, the manifest against the root's manifest_sha256; a skill's tree holds
// SKILL.md, an agent's exactly one AGENT.md) goes to the driver's
// install_from_source, its verified bytes read from memory by manifest path; a driver without
// it gets them staged in a directory ("source": {"directory"}) with the manifest beside it. A
// plain body is sent inline.
Observation observe(const InstallActuator& actuator, engine::InstallerPort& driver,
                    const std::filesystem::path& journal_path,
                    const engine::MaterialIdentity& material, bool claim_was_new) {
  std::optional<std::string> installer_verification;
  if (claim_was_new) {
    try {
      const InstallBody body = actuator.bodies->load(material);
      if (static_cast<std::int64_t>(body.material.size()) != material.content_bytes() ||
          core::sha256_hex(body.material) != material.content_sha256()) {
        return {};
      }
      Json reply;
      if (body.files) {
        // The root the files imply (their manifest's digest, their totals) is the material.
        const auto tree = verified_tree_of(*body.files, material.kind());
        if (!tree || tree->root != body.material) return {};
        Json request = {{"capability_id", material.capability_id()},
                        {"content_bytes", material.content_bytes()},
                        {"content_sha256", material.content_sha256()},
                        {"manifest", tree->manifest},
                        {"material_identity_digest", material.identity_digest()}};
        // The verified bytes go straight to the driver; only an installer without
        // install_from_source (ABI minor 0) reads them from a staged directory.
        // A staging copy a dead process left (a minor-0 installer's) is swept by every install.
        StagedTree::sweep(StagedTree::parent_of(journal_path));
        std::map<std::string_view, std::string_view, std::less<>> by_path;
        for (const auto& file : *body.files) by_path.emplace(file.path, file.bytes);
        auto streamed = driver.install_from_source(
            request, [&by_path](std::string_view path) -> std::optional<std::string_view> {
              const auto it = by_path.find(path);
              if (it == by_path.end()) return std::nullopt;
              return it->second;
            });
        if (streamed) {
          reply = std::move(*streamed);
        } else {
          const StagedTree staged(journal_path, *body.files);
          request["source"] = {{"directory", staged.dir().string()}};
          reply = driver.install(request);
        }
      } else {
        reply = driver.install({{"capability_id", material.capability_id()},
                                {"content_base64", base64(body.material)},
                                {"content_sha256", material.content_sha256()}});
      }
      const auto outcome_text = reply.value("outcome", Json());
      const auto outcome = outcome_text.is_string()
                               ? engine::find_enum<engine::Outcome>(outcome_text.get<std::string>())
                               : std::nullopt;
      if (outcome == engine::Outcome::kApplied) {
        if (reply.value("observed_material_identity_digest", Json()) !=
            material.identity_digest()) {
          return {};
        }
        const auto verification = reply.find("verification_digest");
        if (verification != reply.end() && verification->is_string() &&
            engine::is_digest(verification->get<std::string>())) {
          installer_verification = verification->get<std::string>();
        }
        // The driver verified and synced exactly the authorised material in this call: that is
        // the observation (reading the tree back would only re-hash what it just wrote).
        return Observation{Observation::State::kInstalled, std::move(installer_verification)};
      } else if (outcome != engine::Outcome::kFailed) {
        return {};
      }
    } catch (const Error&) {
      return {};
    } catch (const std::exception&) {
      return {};
    }
  }
  Observation observed = reconcile(driver, material);
  observed.installer_verification_digest = std::move(installer_verification);
  return observed;
}

engine::SettlementGuard stored_guard(const engine::HostAction& action,
                                     const engine::InstallExecutionStatus& status) {
  if (!status.outcome_digest || !status.outcome) {
    throw InstallExecutionError("recorded install outcome has no digest");
  }
  return engine::SettlementGuard{
      engine::ExecutionAuthority::kInstall, action.action_id(), action.content_digest(),
      *status.outcome == engine::InstallOutcome::kApplied ? engine::GuardMode::kApplied
                                                          : engine::GuardMode::kFailed,
      status.outcome_digest};
}

// §6.2 step 6: ActionApplied with the install receipt verification, or ActionFailed
// "install-driver-verified-absent"; id "ctx-install-receipt-<outcome digest>".
engine::EngineEvent receipt_event(const engine::HostAction& action,
                                  const engine::SettlementGuard& guard, engine::Revision head,
                                  const std::string& observed_at) {
  Json body = {{"action_id", action.action_id()},
               {"action_kind", action.action_kind()},
               {"action_content_digest", action.content_digest()},
               {"action_precondition_revision", action.precondition_revision()}};
  const bool applied = guard.mode == engine::GuardMode::kApplied;
  if (applied) {
    const engine::InstallBinding& install = *action.install_payload();
    body["verification"] = {{"schema", engine::kInstallReceiptSchemaV3},
                            {"host_state", "installed"},
                            {"capability_id", action.entity_id().value_or("")},
                            {"capability_kind", install.capability_kind()},
                            {"catalog_identity", install.catalog_identity.to_json()},
                            {"material_identity", install.result_material.to_json()},
                            {"install_plan_descriptor", install.install_plan_descriptor.to_json()},
                            {"installer_digest", install.installer_digest},
                            {"policy_snapshot_digest", install.policy_snapshot_digest}};
  } else {
    body["error"] = {{"code", "install-driver-verified-absent"}};
  }
  engine::EngineEvent::Fields receipt{
      .event_id = "ctx-install-receipt-" + *guard.execution_outcome_digest,
      .kind = applied ? "ActionApplied" : "ActionFailed",
      .scope = action.scope(),
      .expected_revision = head,
      .occurred_at = observed_at,
      .payload = std::move(body),
      .privacy = action.privacy(),
      .correlation_id = action.plan_id(),
      .causation_id = action.action_id()};
  return engine::EngineEvent::create(std::move(receipt));
}

engine::Outcome outcome_of(const std::optional<engine::InstallOutcome>& outcome) {
  if (!outcome) return engine::Outcome::kIndeterminate;
  return *outcome == engine::InstallOutcome::kApplied ? engine::Outcome::kApplied
                                                      : engine::Outcome::kFailed;
}

}  // namespace

TreeMaterialText tree_material_of(const std::vector<InstallBodyFile>& files) {
  return tree_material_with(files, sdk::kSkillFile);
}

engine::InstallExecutionBinding install_binding_of(const engine::InstallPlanDescriptor& descriptor,
                                                   engine::InstallerPort& driver,
                                                   const std::string& host_identity_digest) {
  return engine::InstallExecutionBinding::create(descriptor.installer_id(),
                                                 driver.identity_digest(), host_identity_digest,
                                                 driver.target_identity().digest());
}

engine::InstallExecutionBinding resolve_install_binding(const InstallActuator* actuator,
                                                        const engine::PlanCapabilityV3& selection) {
  return resolve_install_binding(actuator, descriptor_of(selection));
}

engine::InstallExecutionBinding resolve_install_binding(
    const InstallActuator* actuator, const engine::InstallPlanDescriptor& descriptor) {
  auto driver = resolve_driver(actuator, descriptor);
  return binding_of(*actuator, descriptor, *driver);
}

namespace detail {
namespace {

// The action's durable install claim, bound to `captured`: claimed now (after the driver is
// checked to still be the captured one), or another owner's claim checked to bind the same.
engine::InstallExecutionStatus claim_install(const InstallActuators& actuators,
                                             const engine::HostAction& action,
                                             const engine::PlanCapabilityV3& selection,
                                             const engine::InstallPlanDescriptor& descriptor,
                                             const engine::InstallExecutionBinding& captured,
                                             std::string_view expected_policy_digest,
                                             InstallExecutionReport& report) {
  engine::Engine& engine = actuators.engine;
  // Fail closed before any claim: the driver must still be the captured one.
  require_captured(actuators.actuator, selection, captured);
  try {
    engine.authorize_install(action, selection, descriptor, actuators.catalog_snapshot_digest,
                             std::string(expected_policy_digest), captured);
    report.claim_was_new = true;
  } catch (const engine::InstallActionAlreadyClaimed&) {
    report.claim_was_new = false;  // another owner claimed it first: continue from its claim
  }
  crash_point(crash_points::kAfterInstallClaim);
  if (report.claim_was_new) {
    // The claim this call committed (BEGIN IMMEDIATE, no claim of the action before it, so no
    // outcome or settlement either), bound to `captured`: nothing to read back.
    engine::InstallExecutionStatus status;
    status.claimed = true;
    status.execution_binding_digest = captured.binding_digest();
    return status;
  }
  auto status = engine.install_execution_status(action);
  if (!status.claimed || status.execution_binding_digest != captured.binding_digest()) {
    throw InstallExecutionError("install claim was not durably bound to the captured actuator");
  }
  return status;
}

// Calls the captured driver (checked again: same plugin identity, same root) and records what it
// observed as the claim's outcome; nullopt when the observation is indeterminate (nothing is
// recorded).
std::optional<engine::SettlementGuard> record_outcome(
    const InstallActuators& actuators, const engine::HostAction& action,
    const engine::PlanCapabilityV3& selection, const engine::MaterialIdentity& material,
    const engine::InstallExecutionBinding& captured, InstallExecutionReport& report) {
  auto driver = require_captured(actuators.actuator, selection, captured);
  if (!actuators.actuator->bodies) {
    throw InstallExecutionError("composition has no physical installation actuator body source");
  }
  const Observation observed =
      observe(*actuators.actuator, *driver, actuators.journal_path, material, report.claim_was_new);
  if (observed.state == Observation::State::kIndeterminate) return std::nullopt;
  const bool installed = observed.state == Observation::State::kInstalled;
  const std::string verification = engine::identity_digest_of(
      Json{{"binding_digest", captured.binding_digest()},
           {"installed", installed},
           {"installer_verification_digest", observed.installer_verification_digest
                                                 ? Json(*observed.installer_verification_digest)
                                                 : Json(nullptr)},
           {"material_identity_digest", material.identity_digest()},
           {"schema", kInstallVerificationSchema}});
  auto guard = actuators.engine.record_install_outcome(
      action, captured,
      installed ? engine::InstallOutcome::kApplied : engine::InstallOutcome::kFailed,
      installed ? std::optional<std::string>(material.identity_digest()) : std::nullopt,
      verification);
  report.outcome = installed ? engine::Outcome::kApplied : engine::Outcome::kFailed;
  report.verification_digest = verification;
  crash_point(crash_points::kAfterInstallOutcome);
  return guard;
}

// Settles the recorded outcome with its receipt (or finds another owner settled it), re-reading
// the head when it moved.
void settle_install(engine::Engine& engine, const engine::HostAction& action,
                    const engine::SettlementGuard& guard, InstallExecutionReport& report) {
  // One status read gives the first attempt both the observation time and whether another
  // owner settled already; a contended attempt reads it again.
  auto status = engine.install_execution_status(action);
  const auto observed_at = status.observed_at;
  if (!observed_at) {
    throw InstallExecutionError("durable install outcome has no observation time");
  }
  for (int attempt = 0; attempt < kSettlementAttempts; ++attempt) {
    if (attempt > 0) status = engine.install_execution_status(action);
    if (status.settled) {
      report.settled = true;
      return;
    }
    const auto head = engine.snapshot(action.scope().stream_id());
    try {
      auto transition = engine.process_install_receipt(
          receipt_event(action, guard, head.revision, *observed_at), guard);
      crash_point(crash_points::kAfterInstallReceipt);
      report.settled = true;
      report.transition = std::move(transition);
      return;
    } catch (const engine::RevisionConflict&) {
      continue;  // the head moved under us: re-read and settle again
    }
  }
  throw InstallExecutionError("install receipt settlement remained contended");
}

}  // namespace

InstallExecutionReport execute_install(const InstallActuators& actuators,
                                       const engine::HostAction& action,
                                       const engine::PlanCapabilityV3& selection,
                                       const engine::InstallExecutionBinding& captured,
                                       std::string_view expected_policy_digest) {
  engine::Engine& engine = actuators.engine;
  const engine::MaterialIdentity material = result_material(action, selection);
  const auto& descriptor = descriptor_of(selection);
  if (captured.driver_id() != descriptor.installer_id()) {
    throw InstallExecutionError("captured binding does not name the descriptor's installer");
  }
  ExclusiveFileLock execution_lock(execution_lock_slot(actuators.journal_path, action),
                                   kExecutionLockTimeout);
  InstallExecutionReport report{engine::Outcome::kIndeterminate, false, false,
                                captured.binding_digest(),
                                std::nullopt, std::nullopt};

  auto status = engine.install_execution_status(action);
  if (status.claimed && status.execution_binding_digest != captured.binding_digest()) {
    throw InstallExecutionError(
        "durable install claim names another actuator than the captured actuator");
  }
  if (status.settled) {
    report.outcome = outcome_of(status.outcome);
    report.settled = true;
    return report;
  }
  if (!status.claimed) {
    status = claim_install(actuators, action, selection, descriptor, captured,
                           expected_policy_digest, report);
  }
  engine::SettlementGuard guard;
  if (status.outcome_recorded) {
    guard = stored_guard(action, status);
    report.outcome = outcome_of(status.outcome);
  } else {
    auto recorded = record_outcome(actuators, action, selection, material, captured, report);
    if (!recorded) return report;
    guard = std::move(*recorded);
  }
  settle_install(engine, action, guard, report);
  return report;
}

}  // namespace detail
}  // namespace ctx::runtime
