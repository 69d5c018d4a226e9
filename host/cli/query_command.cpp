#include "host/cli/query_command.hpp"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "host/cli/command_options.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/runtime/catalog/state_service.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMaxWorkBytes = 1u << 20;

std::string read_work(const std::string& source) {
  std::string text;
  if (source == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(source, std::ios::binary);
    if (!in) throw NotFound("cannot read the work file " + source);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.size() > kMaxWorkBytes) throw InvalidArgument("current work is larger than 1 MiB");
  return text;
}

void print_prepared(const runtime::ManagedQueryServiceResult& result, bool json,
                    std::ostream& out) {
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
        << engine::to_string(row.benefit_tier())
        << "\n";
  }
  if (result.challenge()) {
    out << "  consent needed: ctx consent approve " << result.challenge()->challenge_digest()
        << " --key FILE\n";
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

int run_query_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                      const Environment& env) {
  return run_guarded(err, kExitUsage, [&] {
    if (args.size() < 2) throw CommandUsage("ctx query needs a command: prepare or reopen");
    const std::string& command = args[1];
    if (command == "prepare") {
      const CommandLine line = parse_command_line(args, 2, "ctx query prepare", {"--work"}, true);
      if (!line.positional.empty()) throw CommandUsage("ctx query prepare takes no arguments");
      const auto work = line.values.find("--work");
      if (work == line.values.end()) throw CommandUsage("ctx query prepare needs --work FILE|-");
      const fs::path state = command_state_dir(line, env);
      auto current = runtime::current_work_from_json(read_work(work->second));
      const auto service = runtime::StateService::open(state);
      print_prepared(service->prepare(std::move(current)), line.json, out);
      return kExitOk;
    }
    if (command == "reopen") {
      const CommandLine line = parse_command_line(args, 2, "ctx query reopen", {}, true);
      if (line.positional.size() != 1) throw CommandUsage("ctx query reopen takes one QUERY_REF");
      const auto service = runtime::StateService::open(command_state_dir(line, env));
      print_prepared(service->reopen(line.positional[0]), line.json, out);
      return kExitOk;
    }
    throw CommandUsage("unknown query command \"" + command + "\"");
  });
}

int run_desired_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const Environment& env) {
  return run_guarded(err, kExitUsage, [&] {
    if (args.size() < 2 || args[1] != "set") throw CommandUsage("ctx desired needs the command set");
    const CommandLine line = parse_command_line(args, 2, "ctx desired set", {"--choice"}, true);
    if (line.positional.size() < 2) {
      throw CommandUsage("ctx desired set needs QUERY_REF and at least one CAPABILITY_ID");
    }
    std::optional<std::string> choice;
    if (const auto it = line.values.find("--choice"); it != line.values.end()) {
      if (!core::is_sha256_hex(it->second)) {
        throw CommandUsage("--choice must be a lowercase SHA-256 digest (64 hex characters)");
      }
      choice = it->second;
    }
    std::vector<std::string> ids(line.positional.begin() + 1, line.positional.end());
    const auto service = runtime::StateService::open(command_state_dir(line, env));
    const auto result = service->set_desired(line.positional[0], std::move(ids), choice);
    if (line.json) {
      out << core::canonical_json(runtime::desired_result_json(result)) << "\n";
    } else {
      out << "desired " << result.desired_set_ref() << " " << runtime::to_string(result.status());
      if (result.reason_code()) out << " (" << *result.reason_code() << ")";
      out << "\n";
      for (const auto& id : result.capability_ids()) out << "  " << id << "\n";
      if (result.challenge()) {
        out << "  consent needed: ctx consent approve " << result.challenge()->challenge_digest()
            << " --key FILE\n";
      }
    }
    return kExitOk;
  });
}

}  // namespace ctx::cli
