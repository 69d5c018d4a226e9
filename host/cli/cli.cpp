#include "host/cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string_view>

#include "host/app/catalog.hpp"
#include "host/cli/catalog_command.hpp"
#include "host/cli/command_options.hpp"
#include "host/cli/consent_command.hpp"
#include "host/cli/demo_command.hpp"
#include "host/cli/hook_command.hpp"
#include "host/cli/hooks_command.hpp"
#include "host/cli/journal_command.hpp"
#include "host/cli/plugin_command.hpp"
#include "host/cli/policy_command.hpp"
#include "host/cli/query_command.hpp"
#include "host/core/crypto.hpp"
#include "host/server/autostart.hpp"
#include "host/server/server.hpp"

#ifndef CTX_VERSION
#error "CTX_VERSION must be defined by the build (PROJECT_VERSION)"
#endif

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
namespace hk = runtime::hooks;

// What the parsed command line runs: set by the callback of the leaf command it selected
// (CLI11 runs those only after the whole line parsed and every requirement held).
using Action = std::function<int(const CommandIo&)>;

// When the command line selects `command`, the action runs `run_command` on `options` (which
// the command's options and positionals were bound to).
template <typename Options>
void runs(CLI::App* command, Action& action, std::shared_ptr<Options> options,
          int (*run_command)(const Options&, const CommandIo&)) {
  command->callback([&action, options, run_command] {
    action = [options, run_command](const CommandIo& io) { return run_command(*options, io); };
  });
}

// A value may not be empty ("--state ''" is a usage error, not the current directory).
const CLI::Validator& non_empty() {
  static const CLI::Validator validator(
      [](std::string& value) {
        return value.empty() ? std::string("needs a value") : std::string();
      },
      "", "NON-EMPTY");
  return validator;
}

const CLI::Validator& sha256_hex() {
  static const CLI::Validator validator(
      [](std::string& value) {
        return core::is_sha256_hex(value)
                   ? std::string()
                   : std::string("must be a lowercase SHA-256 digest (64 hex characters)");
      },
      "", "SHA256");
  return validator;
}

template <typename T>
CLI::Option* add_value(CLI::App* command, const std::string& name, T& value,
                       const std::string& description) {
  return command->add_option(name, value, description)->check(non_empty());
}

CLI::Option* add_state(CLI::App* command, std::optional<fs::path>& state) {
  return add_value(command, "--state", state,
                   "the state directory (default $XDG_STATE_HOME/ctx, else ~/.local/state/ctx)")
      ->type_name("DIR");
}

void add_json(CLI::App* command, bool& json) {
  command->add_flag("--json", json, "print the result as one JSON object");
}

// --- the top-level commands: each adds its subtree to `app` and returns it -------------------

CLI::App* add_plugin(CLI::App& app, Action& action) {
  CLI::App* plugin = app.add_subcommand("plugin", "the plugin lock file")->require_subcommand(1);
  const auto options = std::make_shared<PluginOptions>();
  const auto add_lock = [&](CLI::App* command) {
    add_value(command, "--lock", options->lock, "the plugin lock file")
        ->type_name("FILE")
        ->required();
  };
  CLI::App* pin = plugin->add_subcommand("pin", "pin plugin files (trust on first use)");
  add_lock(pin);
  add_state(pin, options->state);
  pin->add_flag("--replace", options->replace, "re-pin a plugin whose bytes changed");
  pin->add_option("PLUGIN.so", options->files, "the plugin files to pin")
      ->required()
      ->check(non_empty());
  runs(pin, action, options, run_plugin_pin);

  CLI::App* verify = plugin->add_subcommand("verify", "re-check every pinned plugin");
  add_lock(verify);
  add_state(verify, options->state);
  CLI::Option* load =
      verify->add_flag("--load", options->load, "also load each plugin in a supervised child");
  verify->add_option("--timeout", options->timeout_seconds, "the deadline of each --load (10)")
      ->type_name("SECONDS")
      ->check(CLI::Range(1u, 86400u))
      ->needs(load);
  runs(verify, action, options, run_plugin_verify);

  CLI::App* list = plugin->add_subcommand("list", "show the pinned plugins");
  add_lock(list);
  add_json(list, options->json);
  runs(list, action, options, run_plugin_list);
  return plugin;
}

CLI::App* add_init(CLI::App& app, Action& action) {
  CLI::App* init = app.add_subcommand("init", "create the state directory");
  const auto options = std::make_shared<InitOptions>();
  add_state(init, options->state);
  add_value(init, "--trust-key", options->trust_key,
            "trust this public key for your consent decisions")
      ->type_name("FILE");
  runs(init, action, options, run_init);
  return init;
}

CLI::App* add_catalog(CLI::App& app, Action& action) {
  CLI::App* catalog =
      app.add_subcommand("catalog", "the capability catalog")->require_subcommand(1);
  const auto options = std::make_shared<CatalogImportOptions>();
  CLI::App* import = catalog->add_subcommand("import", "validate and import a catalog");
  add_value(import, "DIR", options->catalog, "the catalog directory")->required();
  add_state(import, options->state);
  add_json(import, options->json);
  import->add_flag("--strict", options->strict, "import nothing when any file is skipped");
  runs(import, action, options, run_catalog_import);

  const auto sources = std::make_shared<CatalogSourceOptions>();
  CLI::App* add = catalog->add_subcommand("add", "add a catalog source and import");
  add_value(add, "SOURCE", sources->source, "a directory, a git URL or owner/repo[@ref][/subpath]")
      ->required();
  add_value(add, "--name", sources->name, "the source's name")->type_name("NAME");
  add->add_flag("--strict", sources->strict, "import nothing when any file is skipped");
  add_state(add, sources->state);
  add_json(add, sources->json);
  runs(add, action, sources, run_catalog_add);

  CLI::App* list = catalog->add_subcommand("list", "show the catalog sources");
  add_state(list, sources->state);
  add_json(list, sources->json);
  runs(list, action, sources, run_catalog_list);

  CLI::App* update = catalog->add_subcommand("update", "read sources again and import");
  add_value(update, "NAME", sources->name, "the source (every source when left out)");
  update->add_flag("--strict", sources->strict, "import nothing when any file is skipped");
  add_state(update, sources->state);
  add_json(update, sources->json);
  runs(update, action, sources, run_catalog_update);

  CLI::App* remove = catalog->add_subcommand("remove", "forget a catalog source and import");
  add_value(remove, "NAME", sources->name, "the source")->required();
  add_state(remove, sources->state);
  add_json(remove, sources->json);
  runs(remove, action, sources, run_catalog_remove);

  CLI::App* show = catalog->add_subcommand("show", "show a catalog entry and its source");
  add_value(show, "ENTRY", sources->source, "KIND:NAME or NAME")->required();
  add_state(show, sources->state);
  add_json(show, sources->json);
  runs(show, action, sources, run_catalog_show);
  return catalog;
}

struct ServeOptions {
  std::optional<fs::path> state;
  unsigned idle_exit_seconds = 0;
};

// The log and errors go to io.err. $CTX_SERVE_LOCK_FD: the state dir's lock, held for this
// server by the `ctx hook` that started it (server/autostart.hpp).
int run_serve(const ServeOptions& options, const CommandIo& io) {
  server::ServeConfig config;
  config.idle_exit = std::chrono::seconds(options.idle_exit_seconds);
  if (io.env.serve_lock_fd) {
    const std::string& text = *io.env.serve_lock_fd;
    if (text.empty() || text.size() > 6 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw InvalidArgument(std::string(server::kLockFdVariable) +
                            " must be a file descriptor number");
    }
    config.inherited_lock_fd = std::stoi(text);
  }
  return server::serve(command_state_dir(options.state, io.env), io.err, io.err, config);
}

CLI::App* add_serve(CLI::App& app, Action& action) {
  CLI::App* serve = app.add_subcommand("serve", "JSON-RPC 2.0 server on DIR/ctx.sock");
  const auto options = std::make_shared<ServeOptions>();
  add_state(serve, options->state);
  serve
      ->add_option("--idle-exit", options->idle_exit_seconds,
                   "exit after this long without a connection (0, the default: never)")
      ->type_name("SECONDS")
      ->check(CLI::Range(0u, 604800u));
  runs(serve, action, options, run_serve);
  return serve;
}

CLI::App* add_hook(CLI::App& app, Action& action) {
  CLI::App* hook = app.add_subcommand("hook", "answer one coding-host hook event");
  const auto options = std::make_shared<HookOptions>();
  add_value(hook, "ADAPTER", options->adapter, "the id of a pinned host adapter")->required();
  add_state(hook, options->state);
  hook->add_flag("--no-autoserve", options->no_autoserve,
                 "start no ctx serve when none runs (also CTX_AUTOSERVE=0)");
  runs(hook, action, options, run_hook);
  return hook;
}

CLI::App* add_hooks(CLI::App& app, Action& action) {
  CLI::App* hooks =
      app.add_subcommand("hooks", "the host's hook configuration")->require_subcommand(1);
  const std::vector<std::string> hosts = {std::string(hk::host_name(hk::HookHost::kClaudeCode)),
                                          std::string(hk::host_name(hk::HookHost::kCodex))};
  for (const HooksAction verb :
       {HooksAction::kInstall, HooksAction::kUninstall, HooksAction::kStatus}) {
    const auto options = std::make_shared<HooksOptions>();
    options->action = verb;
    CLI::App* command = hooks->add_subcommand(verb == HooksAction::kInstall     ? "install"
                                              : verb == HooksAction::kUninstall ? "uninstall"
                                                                                : "status");
    command
        ->add_option_function<std::string>(
            "HOST",
            [options](const std::string& name) { options->host = hk::parse_host(name).value(); },
            "the coding host")
        ->required()
        ->check(CLI::IsMember(hosts));
    CLI::Option* project =
        add_value(command, "--project", options->project, "the project whose configuration to use")
            ->type_name("DIR");
    command
        ->add_flag("--user", options->user,
                   "the user configuration (default: the project in the current directory)")
        ->excludes(project);
    CLI::Option* trust = nullptr;
    if (verb == HooksAction::kInstall) {
      add_state(command, options->state);
      trust = command->add_flag("--trust", options->trust,
                                "codex: have codex app-server trust ctx's hooks, as /hooks does");
    }
    if (verb != HooksAction::kUninstall) {
      CLI::Option* codex =
          add_value(command, "--codex", options->codex, "the codex executable (default: on PATH)")
              ->type_name("PATH");
      if (trust != nullptr) codex->needs(trust);
    }
    add_json(command, options->json);
    runs(command, action, options, run_hooks);
  }
  return hooks;
}

CLI::App* add_query(CLI::App& app, Action& action) {
  CLI::App* query = app.add_subcommand("query", "plan the current work")->require_subcommand(1);
  const auto prepare_options = std::make_shared<QueryPrepareOptions>();
  CLI::App* prepare = query->add_subcommand("prepare", "plan the current work FILE describes");
  add_value(prepare, "--work", prepare_options->work, "the current work (JSON; - is stdin)")
      ->type_name("FILE|-")
      ->required();
  add_state(prepare, prepare_options->state);
  add_json(prepare, prepare_options->json);
  runs(prepare, action, prepare_options, run_query_prepare);

  const auto reopen_options = std::make_shared<QueryReopenOptions>();
  CLI::App* reopen = query->add_subcommand("reopen", "show a prepared query again");
  add_value(reopen, "QUERY_REF", reopen_options->query_ref, "a prepared query")->required();
  add_state(reopen, reopen_options->state);
  add_json(reopen, reopen_options->json);
  runs(reopen, action, reopen_options, run_query_reopen);
  return query;
}

CLI::App* add_desired(CLI::App& app, Action& action) {
  CLI::App* desired =
      app.add_subcommand("desired", "the chosen capabilities")->require_subcommand(1);
  const auto options = std::make_shared<DesiredSetOptions>();
  CLI::App* set = desired->add_subcommand("set", "record the chosen subset of a plan");
  add_value(set, "QUERY_REF", options->query_ref, "a prepared query")->required();
  add_value(set, "CAPABILITY_ID", options->capability_ids, "the chosen capabilities of its plan")
      ->required();
  set->add_option("--choice", options->choice, "an idempotency key for the choice")
      ->type_name("ID")
      ->check(sha256_hex());
  add_state(set, options->state);
  add_json(set, options->json);
  runs(set, action, options, run_desired_set);
  return desired;
}

CLI::App* add_consent(CLI::App& app, Action& action) {
  CLI::App* consent = app.add_subcommand("consent", "install consent")->require_subcommand(1);
  const auto add_common = [](CLI::App* command, ConsentCommon& common) {
    add_state(command, common.state);
    add_json(command, common.json);
  };
  const auto show_options = std::make_shared<ConsentShowOptions>();
  CLI::App* show = consent->add_subcommand("show", "the challenges awaiting a decision");
  add_common(show, show_options->common);
  runs(show, action, show_options, run_consent_show);

  for (const engine::Decision decision : {engine::Decision::kGranted, engine::Decision::kDenied}) {
    const auto options = std::make_shared<ConsentDecideOptions>();
    options->decision = decision;
    CLI::App* decide = consent->add_subcommand(
        decision == engine::Decision::kGranted ? "approve" : "deny", "sign and resolve a decision");
    add_value(decide, "CHALLENGE", options->challenge,
              "the challenge's digest or capability name (ctx consent show); none: the one "
              "pending");
    add_value(decide, "--key", options->key, "your private signing key")
        ->type_name("FILE")
        ->required();
    add_common(decide, options->common);
    runs(decide, action, options, run_consent_decide);
  }

  const auto resolve_options = std::make_shared<ConsentResolveOptions>();
  CLI::App* resolve = consent->add_subcommand("resolve", "resolve a signed decision assertion");
  add_value(resolve, "--assertion", resolve_options->assertion, "the assertion (- is stdin)")
      ->type_name("FILE|-")
      ->required();
  add_common(resolve, resolve_options->common);
  runs(resolve, action, resolve_options, run_consent_resolve);

  const auto recover_options = std::make_shared<ConsentRecoverOptions>();
  CLI::App* recover = consent->add_subcommand("recover", "finish a challenge's durable state");
  add_value(recover, "CHALLENGE_DIGEST", recover_options->challenge_digest, "the challenge")
      ->required();
  add_common(recover, recover_options->common);
  runs(recover, action, recover_options, run_consent_recover);

  const auto trust_options = std::make_shared<ConsentTrustOptions>();
  CLI::App* trust = consent->add_subcommand("trust", "trust a verifier for a decision key");
  add_value(trust, "--audience", trust_options->audience,
            "the audience of the decisions (default ctx-local)")
      ->type_name("A");
  CLI::Option* key =
      add_value(trust, "--key", trust_options->key, "your public key (derives all the rest)")
          ->type_name("FILE");
  // Without --key all four are required; with it none may be given.
  std::vector<CLI::Option*> explicit_form = {
      add_value(trust, "--authenticator", trust_options->authenticator, "the authenticator id")
          ->type_name("ID"),
      add_value(trust, "--principal", trust_options->principal, "the principal digest")
          ->type_name("DIGEST"),
      add_value(trust, "--verifier", trust_options->verifier, "the pinned verifier plugin id")
          ->type_name("PLUGIN_ID"),
      add_value(trust, "--config", trust_options->config,
                "the verifier configuration (the public key)")
          ->type_name("FILE")};
  for (CLI::Option* option : explicit_form) option->excludes(key);
  add_common(trust, trust_options->common);
  trust->callback([&action, trust_options, key, explicit_form] {
    if (key->count() == 0) {
      for (CLI::Option* option : explicit_form) {
        if (option->count() == 0) throw CLI::RequiredError(option->get_name());
      }
    }
    action = [trust_options](const CommandIo& io) { return run_consent_trust(*trust_options, io); };
  });

  const auto keys_options = std::make_shared<ConsentKeysOptions>();
  CLI::App* keys = consent->add_subcommand("keys", "the trusted decision keys");
  add_common(keys, keys_options->common);
  runs(keys, action, keys_options, run_consent_keys);

  const auto untrust_options = std::make_shared<ConsentUntrustOptions>();
  CLI::App* untrust = consent->add_subcommand("untrust", "stop trusting a decision key");
  add_value(untrust, "FINGERPRINT", untrust_options->fingerprint,
            "the key's fingerprint (ctx consent keys)")
      ->required();
  add_common(untrust, untrust_options->common);
  runs(untrust, action, untrust_options, run_consent_untrust);

  const auto approvals_options = std::make_shared<ConsentApprovalsOptions>();
  CLI::App* approvals =
      consent->add_subcommand("approvals", "the installs approved once, activated without asking");
  add_common(approvals, approvals_options->common);
  runs(approvals, action, approvals_options, run_consent_approvals);

  const auto revoke_options = std::make_shared<ConsentRevokeOptions>();
  CLI::App* revoke = consent->add_subcommand("revoke", "forget an install approval");
  add_value(revoke, "NAME", revoke_options->name,
            "the capability's name (pdf-export) or id (skill:pdf-export)")
      ->required();
  add_common(revoke, revoke_options->common);
  runs(revoke, action, revoke_options, run_consent_revoke);
  return consent;
}

CLI::App* add_policy(CLI::App& app, Action& action) {
  CLI::App* policy =
      app.add_subcommand("policy", "the install consent policy")->require_subcommand(1);
  const auto options = std::make_shared<PolicySetOptions>();
  CLI::App* set = policy->add_subcommand("set", "the install consent mode of one kind");
  std::vector<std::string> kinds;
  for (const auto kind : {engine::CapabilityKind::kSkill, engine::CapabilityKind::kAgent,
                          engine::CapabilityKind::kMcpServer}) {
    kinds.emplace_back(engine::to_string(kind));
  }
  std::vector<std::string> modes;
  for (const auto mode :
       {runtime::InstallMode::kAskEachTime, runtime::InstallMode::kPreapprovedAuto}) {
    modes.emplace_back(runtime::install_mode_name(mode));
  }
  set->add_option_function<std::string>(
         "KIND",
         [options](const std::string& name) {
           options->kind = engine::find_enum<engine::CapabilityKind>(name).value();
         },
         "the capability kind")
      ->required()
      ->check(CLI::IsMember(kinds));
  set->add_option_function<std::string>(
         "MODE",
         [options](const std::string& name) { options->mode = runtime::parse_install_mode(name); },
         "the install consent mode")
      ->required()
      ->check(CLI::IsMember(modes));
  add_state(set, options->state);
  add_json(set, options->json);
  runs(set, action, options, run_policy_set);
  return policy;
}

CLI::App* add_journal(CLI::App& app, Action& action) {
  CLI::App* journal = app.add_subcommand("journal", "the engine journal")->require_subcommand(1);
  const auto options = std::make_shared<JournalVerifyOptions>();
  CLI::App* verify = journal->add_subcommand("verify", "replay and check the whole journal");
  add_state(verify, options->state);
  add_json(verify, options->json);
  runs(verify, action, options, run_journal_verify);
  return journal;
}

CLI::App* add_demo(CLI::App& app, Action& action) {
  CLI::App* demo = app.add_subcommand("demo", "the main job, one line per step");
  const auto options = std::make_shared<DemoOptions>();
  add_state(demo, options->state);
  add_value(demo, "--catalog", options->catalog, "the catalog to import (examples/catalog)")
      ->type_name("DIR");
  runs(demo, action, options, run_demo);
  return demo;
}

struct HelpOptions {};

int run_help(const HelpOptions&, const CommandIo& io) {
  io.out << usage();
  return kExitOk;
}

CLI::App* add_help(CLI::App& app, Action& action) {
  CLI::App* help = app.add_subcommand("help", "show the help");
  runs(help, action, std::make_shared<HelpOptions>(), run_help);
  return help;
}

// The overview's lines for the command at `path` (words after "ctx"): its synopsis line, where a
// word may be one of '|'-separated alternatives ("approve|deny"), and the lines indented under
// it. Empty when the overview has no such command.
std::string help_block(const std::vector<std::string>& path) {
  const std::string text = usage();
  std::istringstream lines(text);
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("  ctx ")) {
      if (inside) break;
      std::istringstream words(line.substr(6));
      inside = true;
      for (const std::string& want : path) {
        std::string word;
        words >> word;
        bool matched = false;
        for (std::size_t from = 0; from <= word.size();) {
          const std::size_t bar = std::min(word.find('|', from), word.size());
          matched = matched || std::string_view(word).substr(from, bar - from) == want;
          from = bar + 1;
        }
        inside = inside && matched;
      }
    } else if (inside && !line.starts_with("      ")) {
      break;
    }
    if (inside) block += line + "\n";
  }
  return block;
}

// Gives every leaf command under `command` (at `path`) its overview lines as the footer of its
// generated help, so `ctx ... --help` shows what the option list alone does not.
void add_help_footers(CLI::App* command, std::vector<std::string> path) {
  path.push_back(command->get_name());
  const auto children = command->get_subcommands([](const CLI::App*) { return true; });
  if (children.empty()) {
    command->footer([path] {
      std::string block = help_block(path);
      if (!block.empty()) block.pop_back();  // the formatter ends the help with a newline
      return block;
    });
  }
  for (CLI::App* child : children) add_help_footers(child, path);
}

struct TopCommand {
  std::string_view name;
  CLI::App* (*add)(CLI::App& app, Action& action);
};

constexpr TopCommand kTopCommands[] = {
    {"plugin", add_plugin}, {"init", add_init},       {"catalog", add_catalog},
    {"serve", add_serve},   {"hook", add_hook},       {"hooks", add_hooks},
    {"query", add_query},   {"desired", add_desired}, {"consent", add_consent},
    {"policy", add_policy}, {"journal", add_journal}, {"demo", add_demo},
    {"help", add_help},
};

void collect_specs(const CLI::App* command, std::string path, std::vector<CommandSpec>& specs) {
  path += (path.empty() ? "" : " ") + command->get_name();
  const auto children = command->get_subcommands([](const CLI::App*) { return true; });
  if (children.empty()) {
    CommandSpec spec{path, {}, {}};
    for (const CLI::Option* option : command->get_options()) {
      if (option == command->get_help_ptr()) continue;
      if (option->get_positional()) {
        spec.positionals.push_back(option->get_name());
      } else {
        spec.options.push_back(option->get_name());
      }
    }
    specs.push_back(std::move(spec));
  }
  for (const CLI::App* child : children) collect_specs(child, path, specs);
}

// Runs the parsed command; its typed errors become stderr lines ("ctx: error: ...", a catalog
// import one per invalid file) and exit 1.
int run_action(const Action& action, const CommandIo& io) {
  try {
    return action(io);
  } catch (const runtime::CatalogImportError& e) {
    for (const auto& problem : e.problems()) {
      io.err << "ctx: error: catalog entry " << single_line_text(problem.file) << ": "
             << single_line_text(problem.rule) << "\n";
    }
    io.err << "ctx: error: nothing was imported (" << e.problems().size() << " invalid file"
           << (e.problems().size() == 1 ? "" : "s") << ")\n";
  } catch (const std::exception& e) {
    io.err << "ctx: error: " << single_line_text(e.what()) << "\n";
  } catch (...) {
    io.err << "ctx: error: unknown failure\n";
  }
  return kExitFailure;
}

// CLI11's message, except that "A subcommand is required" says of what (the command the line
// reached, the word given instead of a subcommand, and the subcommands there are), and that the
// unexpected arguments are listed in command-line order (CLI11 2.1 lists a subcommand's
// backwards).
std::string usage_message(const CLI::ParseError& error, const CLI::App& app) {
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    const std::vector<std::string> extras = app.remaining(/*recurse=*/true);
    std::string message = extras.size() == 1 ? "The following argument was not expected:"
                                             : "The following arguments were not expected:";
    for (const std::string& extra : extras) message += " " + extra;
    return extras.empty() ? std::string(error.what()) : message;
  }
  const CLI::App* reached = &app;
  std::string path = "ctx";
  while (!reached->get_subcommands().empty()) {
    reached = reached->get_subcommands().front();
    path += " " + reached->get_name();
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) == nullptr ||
      reached->get_require_subcommand_min() == 0) {
    return error.what();
  }
  std::string names;
  for (const CLI::App* command : reached->get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  const std::vector<std::string> rest = reached->remaining();
  if (rest.empty()) return path + " needs a command: " + names;
  return path + ": unknown command \"" + rest.front() + "\" (commands: " + names + ")";
}

int parse_and_run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                  std::ostream& err, const Environment& env) {
  CLI::App app("ctx: the capability-engine host", "ctx");
  app.set_help_flag("-h,--help", "show the help of the command reached");
  bool version = false;
  CLI::Option* version_flag = app.add_flag("--version", version);
  app.require_subcommand(0, 1);
  // Only the command args[0] names gets its subtree: a command line selects one top-level
  // command, and building every subtree would cost each `ctx hook` and `ctx --version` start
  // (measured with callgrind: the whole tree is ~1.3 M instructions, +20% of `ctx --version`;
  // one subtree is ~0.05-0.1 M, ~1.5%).
  Action action;
  bool is_hook = false;
  for (const TopCommand& command : kTopCommands) {
    if (!args.empty() && args.front() == command.name) {
      CLI::App* top = command.add(app, action);
      top->excludes(version_flag);
      add_help_footers(top, {});
      is_hook = command.name == "hook";
    }
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {  // -h/--help, anywhere: the help of the command reached
    out << (app.get_subcommands().empty() ? usage() : app.help());
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (is_hook) {  // never 2: that would block the host's prompt or tool
      err << "ctx hook: " << single_line_text(usage_message(e, app)) << "\n";
      return kExitFailure;
    }
    err << "ctx: " << single_line_text(usage_message(e, app)) << " (see ctx --help)\n";
    return kExitUsage;
  }
  if (version) {
    out << "ctx " << CTX_VERSION << "\n";
    return kExitOk;
  }
  if (!action) {
    err << "ctx: missing command (see ctx --help)\n";
    return kExitUsage;
  }
  return run_action(action, CommandIo{in, out, err, env});
}

}  // namespace

Environment Environment::from_process() {
  Environment env;
  if (const char* value = std::getenv("XDG_STATE_HOME")) env.xdg_state_home = value;
  if (const char* value = std::getenv("HOME")) env.home = value;
  if (const char* value = std::getenv("PATH")) env.path = value;
  if (const char* value = std::getenv("CODEX_HOME")) env.codex_home = value;
  if (const char* value = std::getenv("CLAUDE_CONFIG_DIR")) env.claude_config_dir = value;
  if (const char* value = std::getenv("CTX_AUTOSERVE")) env.autoserve = value;
  if (const char* value = std::getenv("CTX_AUTOSERVE_IDLE")) env.autoserve_idle = value;
  if (const char* value = std::getenv(server::kLockFdVariable)) env.serve_lock_fd = value;
  env.executable = "/proc/self/exe";  // this very binary, even once replaced on disk
  return env;
}

fs::path default_state_dir(const Environment& env) {
  if (env.xdg_state_home && !env.xdg_state_home->empty() &&
      fs::path(*env.xdg_state_home).is_absolute()) {
    return fs::path(*env.xdg_state_home) / "ctx";
  }
  if (env.home && !env.home->empty() && fs::path(*env.home).is_absolute()) {
    return fs::path(*env.home) / ".local" / "state" / "ctx";
  }
  throw InvalidArgument("no state directory: set --state, XDG_STATE_HOME or HOME");
}

std::vector<CommandSpec> command_specs() {
  std::vector<CommandSpec> specs;
  for (const TopCommand& command : kTopCommands) {
    CLI::App app;
    Action action;
    collect_specs(command.add(app, action), "", specs);
  }
  return specs;
}

std::string usage() {
  return "usage:\n"
         "  ctx help | --help          show this overview; ctx COMMAND... --help shows that\n"
         "      command's options as the parser defines them, then its lines below\n"
         "  ctx --version              print the version\n" +
         plugin_usage() +
         "  ctx serve [--state DIR] [--idle-exit SECONDS]\n"
         "      JSON-RPC 2.0 server on DIR/ctx.sock (0600) until SIGTERM/SIGINT, SECONDS\n"
         "      without a connection, or its state dir moved or removed\n" +
         hooks_usage() + catalog_usage() + query_usage() + hook_usage() + policy_usage() +
         journal_usage() + consent_usage() + demo_usage() +
         "\n"
         "--state defaults to $XDG_STATE_HOME/ctx, else ~/.local/state/ctx.\n"
         "exit codes: 0 ok, 1 command failed, 2 usage error; ctx hook exits 0 (a reply or\n"
         "nothing) or 1 (one stderr line) and never 2, which would block the host\n";
}

int run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, const Environment& env) {
  const bool is_hook = !args.empty() && args.front() == "hook";
  try {
    return parse_and_run(args, in, out, err, env);
  } catch (const std::exception& e) {  // the App tree itself failed (out of memory)
    err << (is_hook ? "ctx hook: " : "ctx: error: ") << single_line_text(e.what()) << "\n";
  } catch (...) {
    err << (is_hook ? "ctx hook: " : "ctx: error: ") << "unknown failure\n";
  }
  return kExitFailure;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const Environment& env) {
  return run(args, std::cin, out, err, env);
}

}  // namespace ctx::cli
