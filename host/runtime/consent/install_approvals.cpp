#include "host/runtime/consent/install_approvals.hpp"

#include <chrono>
#include <set>
#include <utility>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"
#include "host/core/time.hpp"
#include "host/engine/lexical.hpp"
#include "host/runtime/consent/private_file.hpp"
#include "host/runtime/file_lock.hpp"

namespace ctx::runtime {
namespace {

using core::Json;

constexpr std::string_view kSchema = "ctx.install-approvals-v1";
constexpr std::size_t kMaxFileBytes = 1 << 20;
constexpr std::size_t kMaxApprovals = 4096;
constexpr std::chrono::seconds kLockTimeout{30};

[[noreturn]] void altered() { throw DataLoss("install approvals are altered or malformed"); }

std::string mac_of(const std::string& key, const Json& body) {
  return core::hmac_sha256_hex(
      key, std::string(kSchema) + std::string(1, '\0') + core::canonical_json(body));
}

Json to_json(const InstallApproval& a) {
  return Json{{"approved_at", a.approved_at},
              {"capability_id", a.capability_id},
              {"content_bytes", a.content_bytes},
              {"content_sha256", a.content_sha256},
              {"kind", a.kind},
              {"material_identity_digest", a.material_identity_digest},
              {"policy_digest", a.policy_digest}};
}

// Errors: InvalidArgument naming the field.
void validate(const InstallApproval& a) {
  if (!engine::is_capability_identity(a.capability_id, a.kind)) {
    throw InvalidArgument("install approval: capability_id does not name its kind");
  }
  if (!engine::is_digest(a.material_identity_digest) || !engine::is_digest(a.content_sha256) ||
      !engine::is_digest(a.policy_digest)) {
    throw InvalidArgument("install approval: digests must be lowercase sha-256");
  }
  if (a.content_bytes < 1) throw InvalidArgument("install approval: content_bytes must be >= 1");
  try {
    (void)core::parse_rfc3339(a.approved_at);
  } catch (const Error&) {
    throw InvalidArgument("install approval: approved_at must be canonical UTC");
  }
}

InstallApproval from_json(const Json& value) {
  static const std::set<std::string> kKeys = {"approved_at",   "capability_id",
                                              "content_bytes", "content_sha256",
                                              "kind",          "material_identity_digest",
                                              "policy_digest"};
  if (!value.is_object() || value.size() != kKeys.size()) altered();
  for (const auto& [k, v] : value.items()) {
    if (!kKeys.count(k)) altered();
    if (k == "content_bytes" ? !v.is_number_integer() : !v.is_string()) altered();
  }
  const auto kind = engine::find_enum<engine::CapabilityKind>(value.at("kind").get<std::string>());
  if (!kind) altered();
  InstallApproval a{value.at("capability_id").get<std::string>(),
                    *kind,
                    value.at("material_identity_digest").get<std::string>(),
                    value.at("content_sha256").get<std::string>(),
                    value.at("content_bytes").get<std::int64_t>(),
                    value.at("policy_digest").get<std::string>(),
                    value.at("approved_at").get<std::string>()};
  try {
    validate(a);
  } catch (const InvalidArgument&) {
    altered();
  }
  return a;
}

// "<dir>/.<name>.lock" of `file`. Built by appending: "." + name + ".lock" made GCC 12 -O3 report
// a false -Wrestrict in std::string's operator+ (a failed Release build under -Werror).
std::filesystem::path lock_path_of(const std::filesystem::path& file) {
  std::string name = ".";
  name += file.filename().string();
  name += ".lock";
  return file.parent_path() / name;
}

}  // namespace

InstallApprovals::InstallApprovals(std::filesystem::path file, std::string key, core::StateFs& fs)
    : file_(std::move(file)), key_(std::move(key)), fs_(fs) {
  if (!file_.is_absolute()) throw InvalidArgument("install approvals path must be absolute");
  if (key_.empty()) throw InvalidArgument("install approvals need the installation key");
}

InstallApprovalMap InstallApprovals::load() const {
  const auto bytes = read_private_file(file_, kMaxFileBytes, "install approvals");
  if (!bytes) return {};
  Json value;
  try {
    std::string_view text(*bytes);
    if (text.empty() || text.back() != '\n') altered();
    text.remove_suffix(1);
    value = core::parse_canonical_json(text);
  } catch (const DataLoss&) {
    throw;
  } catch (const std::exception&) {
    altered();
  }
  if (!value.is_object() || value.size() != 3 || !value.contains("mac") ||
      !value.contains("approvals") || value.value("schema", "") != kSchema ||
      !value.at("mac").is_string() || !value.at("approvals").is_object()) {
    altered();
  }
  const std::string mac = value.at("mac").get<std::string>();
  value.erase("mac");
  if (!core::constant_time_equal(mac, mac_of(key_, value))) altered();
  InstallApprovalMap out;
  for (const auto& [id, item] : value.at("approvals").items()) {
    InstallApproval a = from_json(item);
    if (a.capability_id != id) altered();
    out.emplace(id, std::move(a));
  }
  return out;
}

void InstallApprovals::write(const InstallApprovalMap& approvals) const {
  Json list = Json::object();
  for (const auto& [id, a] : approvals) list[id] = to_json(a);
  Json body = {{"approvals", std::move(list)}, {"schema", std::string(kSchema)}};
  body["mac"] = mac_of(key_, Json{{"approvals", body.at("approvals")}, {"schema", kSchema}});
  write_private_file(file_, core::canonical_json(body) + "\n", "install approvals", fs_);
}

void InstallApprovals::record(const InstallApproval& approval) const {
  validate(approval);
  const ExclusiveFileLock lock(lock_path_of(file_), kLockTimeout);
  InstallApprovalMap all = load();
  const auto it = all.find(approval.capability_id);
  if (it != all.end() && it->second == approval) return;
  if (it == all.end() && all.size() >= kMaxApprovals) {
    throw Error("install approvals: at most 4096 capabilities", ErrorCode::kResourceExhausted);
  }
  all[approval.capability_id] = approval;
  write(all);
}

bool InstallApprovals::revoke(const std::string& capability_id) const {
  const ExclusiveFileLock lock(lock_path_of(file_), kLockTimeout);
  InstallApprovalMap all = load();
  if (all.erase(capability_id) == 0) return false;
  write(all);
  return true;
}

InstallApprovalMap approvals_under(const InstallApprovalMap& all,
                                   const std::string& policy_digest) {
  InstallApprovalMap out;
  for (const auto& [id, a] : all) {
    if (a.policy_digest == policy_digest) out.emplace(id, a);
  }
  return out;
}

bool approves(const InstallApprovalMap& approvals, const std::string& capability_id,
              engine::CapabilityKind kind, const std::string& material_identity_digest,
              const std::string& policy_digest) {
  const auto it = approvals.find(capability_id);
  return it != approvals.end() && it->second.kind == kind &&
         it->second.material_identity_digest == material_identity_digest &&
         it->second.policy_digest == policy_digest;
}

bool approves_install(const InstallApprovals* approvals,
                      const engine::InstallPlanDescriptor& descriptor,
                      const std::string& policy_digest) {
  const auto& material = descriptor.result_material_identity_digest();
  return approvals != nullptr && material &&
         approves(approvals->load(), descriptor.capability_id(), descriptor.kind(), *material,
                  policy_digest);
}

std::string approvals_digest(const InstallApprovalMap& approvals) {
  Json list = Json::array();
  for (const auto& [id, a] : approvals) list.push_back(to_json(a));
  return core::canonical_digest(Json{{"approvals", std::move(list)}, {"schema", kSchema}},
                                core::Encoding::kAscii);
}

}  // namespace ctx::runtime
