#include "host/cli/query_command.hpp"

#include <fstream>
#include <istream>
#include <iterator>
#include <sstream>

#include "host/app/consent.hpp"
#include "host/app/state_service.hpp"
#include "host/app/wire.hpp"
#include "host/cli/command_options.hpp"
#include "host/core/canonical_json.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMaxWorkBytes = 1u << 20;

std::string read_work(const std::string& source, std::istream& stdin_stream) {
  std::string text;
  if (source == "-") {
    text.assign(std::istreambuf_iterator<char>(stdin_stream), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(source, std::ios::binary);
    if (!in) throw NotFound("cannot read the work file " + source);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.size() > kMaxWorkBytes) throw InvalidArgument("current work is larger than 1 MiB");
  return text;
}

void print_prepared(const runtime::ManagedQueryServiceResult& result, bool json,
                    const std::optional<fs::path>& shown_state, std::ostream& out) {
  if (json) {
    out << core::canonical_json(runtime::managed_result_json(result)) << "\n";
    return;
  }
  const auto& prepared = result.prepared();
  out << "query " << result.query_ref() << " " << engine::to_string(prepared.status());
  if (const auto& code = prepared.abstention_code()) out << " (" << engine::to_string(*code) << ")";
  out << " plan " << prepared.plan_id() << "\n";
  for (const auto& row : prepared.selections()) {
    out << "  " << row.capability_id() << " " << engine::to_string(row.actionability()) << " "
        << engine::to_string(row.benefit_tier()) << "\n";
  }
  if (result.challenge()) {
    out << "  consent needed: "
        << runtime::consent_command("approve", result.challenge()->challenge_digest(), shown_state)
        << "\n";
  }
}

}  // namespace

std::string query_usage() {
  return "  ctx query prepare --work FILE|- [--state DIR] [--json]\n"
         "      plan the current work FILE describes ({\"session\":{...},\"signals\":[...],\n"
         "      \"languages\":[...],\"requested_limit\":N}); only catalog terms are kept\n"
         "  ctx query reopen QUERY_REF [--state DIR] [--json]\n"
         "      show a prepared query again without planning\n"
         "  ctx desired set QUERY_REF CAPABILITY_ID... [--choice ID] [--state DIR] [--json]\n"
         "      record the chosen subset of the query's committed plan\n";
}

int run_query_prepare(const QueryPrepareOptions& options, const CommandIo& io) {
  const fs::path state = command_state_dir(options.state, io.env);
  auto current = runtime::current_work_from_json(read_work(options.work, io.in));
  const auto service = runtime::StateService::open(state);
  print_prepared(service->prepare(std::move(current)), options.json, printed_state(state, io.env),
                 io.out);
  return kExitOk;
}

int run_query_reopen(const QueryReopenOptions& options, const CommandIo& io) {
  const fs::path state = command_state_dir(options.state, io.env);
  const auto service = runtime::StateService::open(state);
  print_prepared(service->reopen(options.query_ref), options.json, printed_state(state, io.env),
                 io.out);
  return kExitOk;
}

int run_desired_set(const DesiredSetOptions& options, const CommandIo& io) {
  std::ostream& out = io.out;
  const fs::path state = command_state_dir(options.state, io.env);
  const auto service = runtime::StateService::open(state);
  const auto result =
      service->set_desired(options.query_ref, options.capability_ids, options.choice);
  if (options.json) {
    out << core::canonical_json(runtime::desired_result_json(result)) << "\n";
  } else {
    out << "desired " << result.desired_set_ref() << " " << runtime::to_string(result.status());
    if (result.reason_code()) out << " (" << *result.reason_code() << ")";
    out << "\n";
    for (const auto& id : result.capability_ids()) out << "  " << id << "\n";
    if (result.challenge()) {
      out << "  consent needed: "
          << runtime::consent_command("approve", result.challenge()->challenge_digest(),
                                      printed_state(state, io.env))
          << "\n";
    }
  }
  return kExitOk;
}

}  // namespace ctx::cli
