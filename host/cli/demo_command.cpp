#include "host/cli/demo_command.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "host/app/consent.hpp"
#include "host/app/hook/hook_runner.hpp"
#include "host/app/installation.hpp"
#include "host/app/plugins.hpp"
#include "host/app/state_layout.hpp"
#include "host/app/state_service.hpp"
#include "host/cli/command_options.hpp"
#include "host/cli/consent_key.hpp"
#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"

#ifndef CTX_SOURCE_DIR
#error "CTX_SOURCE_DIR must be defined by the build"
#endif

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;

// A step failed: its own command already wrote why.
struct StepFailed {
  int code;
};

// The step's output as one line.
std::string one_line_of(const std::string& text) {
  std::string line;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part);) {
    if (part.empty()) continue;
    if (!line.empty()) line += "; ";
    line += part;
  }
  return line;
}

// Runs one CLI command in process; its stdout becomes the step's line.
template <typename F>
std::string run_step(F&& command) {
  std::ostringstream out;
  const int code = command(out);
  if (code != kExitOk) throw StepFailed{code};
  return one_line_of(out.str());
}

fs::path default_catalog() {
  std::error_code ec;
  if (fs::is_directory("examples/catalog", ec)) return fs::absolute("examples/catalog");
  return fs::path(CTX_SOURCE_DIR) / "examples" / "catalog";
}

// Makes <state>/demo/decision-key.pem once (0600 in a 0700 directory).
bool ensure_demo_key(const fs::path& file) {
  std::error_code ec;
  if (fs::exists(file, ec)) return false;
  runtime::ensure_private_dir(file.parent_path(), "demo key directory");
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  BIO* bio = BIO_new(BIO_s_mem());
  if (key == nullptr || bio == nullptr ||
      PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    EVP_PKEY_free(key);
    BIO_free(bio);
    throw SystemError("openssl could not make the demo Ed25519 key");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  const std::string pem(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  EVP_PKEY_free(key);
  runtime::write_private_file(file, pem, "demo key");
  return true;
}

// True when <state>'s registry already trusts `key` for the demo audience.
bool already_trusted(const fs::path& state, const UserDecisionKey& key) {
  const app::LoadedPlugins none;
  const runtime::TrustedVerifierRegistry registry(state, none);
  for (const runtime::VerifierRegistration& registration : registry.registrations()) {
    if (registration.key.audience == kDemoAudience &&
        key.matches(registration.plugin_id, registration.config)) {
      return true;
    }
  }
  return false;
}

// A SessionStart payload as Claude Code writes it on the hook's stdin when a session resumes.
std::string claude_code_session_start(const fs::path& project) {
  return core::Json{{"session_id", "9f2c4e1a-demo-4b7e-8c21-5d3f6a0b9e71"},
                    {"transcript_path", (project / ".claude" / "transcript.jsonl").string()},
                    {"cwd", project.string()},
                    {"hook_event_name", "SessionStart"},
                    {"source", "resume"}}
      .dump();
}

// A UserPromptSubmit payload exactly as Claude Code writes it on the hook's stdin.
std::string claude_code_prompt(const fs::path& project) {
  return core::Json{{"session_id", "9f2c4e1a-demo-4b7e-8c21-5d3f6a0b9e71"},
                    {"transcript_path", (project / ".claude" / "transcript.jsonl").string()},
                    {"cwd", project.string()},
                    {"permission_mode", "default"},
                    {"hook_event_name", "UserPromptSubmit"},
                    {"prompt", "Please add a PDF export of the monthly report to this project"}}
      .dump();
}

constexpr const char* kDemoAdapter = "claude-code";

// The pinned Claude Code adapter of the state dir, created with its installation key (as
// ctx hook creates it).
std::shared_ptr<engine::HostAdapterPort> demo_adapter(const fs::path& state) {
  const app::Installation installation(state,
                                       plugins::LockFile::load(state / runtime::kPluginLockFile));
  if (!installation.pinned(plugins::PluginKind::kHostAdapter, kDemoAdapter)) {
    throw NotFound("the claude-code host adapter is not pinned (ctx init)");
  }
  return installation.host_adapter(kDemoAdapter);
}

// The current work ctx hook registered for `payload` (same adapter, same scope and signals).
runtime::CurrentWork work_of(engine::HostAdapterPort& adapter, const std::string& payload) {
  engine::HookObservation parsed = adapter.parse_hook(payload);
  const core::Json& scope = parsed.scope;
  runtime::CurrentWork work;
  work.tenant = scope.at("tenant_id").get<std::string>();
  work.workspace = scope.at("workspace_id").get<std::string>();
  work.repository = scope.at("repository_id").get<std::string>();
  work.session = scope.at("session_id").get<std::string>();
  work.signals = std::move(parsed.signals);
  work.requested_limit = runtime::hooks::kHookRequestedLimit;
  return work;
}

std::string skill_name_of(const std::string& capability_id) {
  return capability_id.substr(capability_id.find(':') + 1);
}

}  // namespace

std::string demo_usage() {
  return "  ctx demo [--state DIR] [--catalog DIR]\n"
         "      the main job, one line per step: init, import the example catalog, a demo\n"
         "      decision key trusted for consent, a Claude Code prompt through ctx hook, the\n"
         "      plan and its consent challenge, approval with the demo key, the skill installed\n"
         "      and activated in DIR/demo-project/.claude/skills/NAME/, the host's reply\n";
}

int run_demo(const DemoOptions& options, const CommandIo& io) {
  std::ostream& out = io.out;
  std::ostream& err = io.err;
  const Environment& env = io.env;
  const fs::path state = command_state_dir(options.state, env);
  const fs::path catalog_dir = options.catalog ? fs::absolute(*options.catalog) : default_catalog();
  const std::string state_arg = state.string();
  const runtime::StatePaths paths = runtime::StatePaths::of(state);
  const fs::path& project = paths.demo_project;
  try {
    out << "ctx demo: state directory " << state_arg << "\n";
    out << "1 init: " << run_step([&](std::ostream& o) {
      return run({"init", "--state", state_arg}, io.in, o, err, env);
    }) << "\n";
    out << "2 catalog: " << run_step([&](std::ostream& o) {
      return run({"catalog", "import", catalog_dir.string(), "--state", state_arg}, io.in, o, err,
                 env);
    }) << "\n";

    const fs::path& key_file = paths.demo_key;
    const bool made = ensure_demo_key(key_file);
    const UserDecisionKey key = UserDecisionKey::load(key_file);
    out << "3 key: " << (made ? "created" : "reused") << " the demo Ed25519 decision key "
        << key_file.string() << " (principal " << key.default_principal_digest() << ")\n";

    if (already_trusted(state, key)) {
      out << "4 trust: the demo key is already trusted for audience " << kDemoAudience << "\n";
    } else {
      const fs::path& config = paths.demo_verifier_config;
      runtime::write_private_file(config, core::canonical_json(key.verifier_config()),
                                  "demo verifier config");
      out << "4 trust: " << run_step([&](std::ostream& o) {
        return run(
            {"consent", "trust", "--audience", kDemoAudience, "--authenticator", kDemoAuthenticator,
             "--principal", key.default_principal_digest(), "--verifier",
             std::string(key.verifier_id()), "--config", config.string(), "--state", state_arg},
            io.in, o, err, env);
      }) << "\n";
    }

    runtime::ensure_private_dir(project, "demo project");
    // Installed skills become active where Claude Code looks for the project's skills.
    const runtime::ActivationTarget target =
        runtime::set_activation_target(state, kDemoAdapter, project);
    const std::string prompt = claude_code_prompt(project);
    std::istringstream payload(prompt);
    const std::string reply = run_step([&](std::ostream& o) {
      return run({"hook", kDemoAdapter, "--state", state_arg}, payload, o, err, env);
    });
    out << "5 hook: fed a Claude Code UserPromptSubmit payload (cwd " << project.string()
        << ") through ctx hook claude-code; the host's reply: "
        << (reply.empty() ? "(nothing to say)" : reply) << "\n";

    // 6: the plan ctx hook committed for that prompt, and the user's choice of its skill.
    auto adapter = demo_adapter(state);
    runtime::CurrentWork work = work_of(*adapter, prompt);
    std::string capability;
    std::optional<std::string> challenge;
    {
      auto service = runtime::StateService::open(state);
      service->place_in_project(work, kDemoAdapter, project);
      const auto current = service->reopen_current(work);
      if (!current) throw NotFound("ctx hook committed no plan for the demo prompt");
      std::string plan;
      for (const auto* row : current->prepared().by_relevance()) {
        if (!plan.empty()) plan += ", ";
        plan += row->capability_id() + " (" + std::string(engine::to_string(row->actionability())) +
                ")";
        if (capability.empty() && row->kind() == engine::CapabilityKind::kSkill &&
            row->actionability() == engine::Actionability::kInstall) {
          capability = row->capability_id();
        }
      }
      if (capability.empty()) throw NotFound("the demo plan recommends no installable skill");
      const auto desired = service->set_desired(current->query_ref(), {capability});
      out << "6 plan: " << current->prepared().plan_id() << " recommends " << plan << "; chose "
          << capability << " -> " << runtime::to_string(desired.status());
      if (desired.challenge()) {
        challenge = desired.challenge()->challenge_digest();
        out << ", consent challenge " << *challenge << " (expires "
            << desired.challenge()->expires_at() << ")";
      }
      out << "\n";
    }

    // 7: what is waiting for the user's decision.
    out << "7 consent: " << run_step([&](std::ostream& o) {
      return run({"consent", "show", "--state", state_arg}, io.in, o, err, env);
    }) << "\n";

    // 8: the decision, signed with the demo key; a grant installs and activates the skill.
    const fs::path skill_md = target.skills_dir / skill_name_of(capability) / "SKILL.md";
    std::error_code ec;
    if (challenge) {
      const std::string decided = run_step([&](std::ostream& o) {
        return run(
            {"consent", "approve", *challenge, "--key", key_file.string(), "--state", state_arg},
            io.in, o, err, env);
      });
      if (!fs::is_regular_file(skill_md, ec)) {
        err << "ctx demo: the approved skill is not at " << skill_md.string() << "\n";
        return kExitFailure;
      }
      out << "8 approve: signed the grant with the demo key: " << decided << "; " << capability
          << " is active at " << skill_md.string() << "\n";
    } else if (fs::is_regular_file(skill_md, ec)) {
      out << "8 approve: nothing to approve: " << capability
          << " was approved and installed by an earlier run; active at " << skill_md.string()
          << "\n";
    } else {
      err << "ctx demo: " << capability << " has no consent challenge and is not installed\n";
      return kExitFailure;
    }

    // 9: what Claude Code is told when its session (re)starts: reload the skill directories.
    engine::ReplyRequest reply_request;
    reply_request.host_event = adapter->parse_hook(claude_code_session_start(project)).host_event;
    reply_request.installed = {capability};
    out << "9 reply: Claude Code's SessionStart reply: " << adapter->render_reply(reply_request)
        << "\n";
  } catch (const StepFailed& failed) {
    return failed.code;
  }
  return kExitOk;
}

}  // namespace ctx::cli
