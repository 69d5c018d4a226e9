// host/app/wire.hpp: the `ctx hooks install|uninstall|status --json` results carry exactly their
// documented fields, optional ones only when they apply.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "host/app/wire.hpp"

namespace ctx::runtime {
namespace {

std::set<std::string> keys_of(const core::Json& object) {
  std::set<std::string> keys;
  for (const auto& item : object.items()) keys.insert(item.key());
  return keys;
}

hooks::HooksChange a_change() {
  hooks::HooksChange change;
  change.changed = true;
  change.file = "/p/.claude/settings.json";
  change.events = {"SessionStart", "UserPromptSubmit"};
  change.notice = "review in /hooks";
  return change;
}

ActivationTarget a_target() {
  ActivationTarget target;
  target.skills_dir = "/p/.claude/skills";
  target.agents_dir = "/p/.claude/agents";
  target.mcp_file = "/p/.mcp.json";
  return target;
}

TEST(WireHooksTest, InstallHasTheChangeAndOnlyTheFieldsThatApply) {
  HooksInstallReport report{"claude-code", a_change(), std::nullopt, std::nullopt, std::nullopt};
  core::Json json = hooks_install_json(report);
  EXPECT_EQ(keys_of(json), (std::set<std::string>{"host", "action", "changed", "file", "events",
                                                  "notice", "created"}));
  EXPECT_EQ(json["action"], "install");
  EXPECT_EQ(json["events"], core::Json({"SessionStart", "UserPromptSubmit"}));

  report.change.backup = "/p/.claude/settings.json.ctx-backup";
  report.activation = a_target();
  report.project_trusted = false;
  report.trusted = std::make_pair(std::size_t{2}, std::size_t{3});
  json = hooks_install_json(report);
  EXPECT_EQ(keys_of(json),
            (std::set<std::string>{"host", "action", "changed", "file", "events", "notice",
                                   "created", "backup", "skills_activate_in", "agents_activate_in",
                                   "mcp_servers_activate_in", "project_trusted", "trusted_now",
                                   "trusted"}));
  EXPECT_EQ(json["mcp_servers_activate_in"], "/p/.mcp.json");
  EXPECT_EQ(json["trusted_now"], 2);
  EXPECT_EQ(json["trusted"], 3);
}

TEST(WireHooksTest, UninstallSaysWhatWasRemovedAndCodexTrustOnlyForCodex) {
  auto change = a_change();
  change.restored = true;
  HooksUninstallReport report{"claude-code", change, {"pdf-export"}, true, std::nullopt};
  core::Json json = hooks_uninstall_json(report);
  EXPECT_EQ(keys_of(json),
            (std::set<std::string>{"host", "action", "changed", "file", "events", "restored",
                                   "activation_links_removed", "activation_target_removed"}));
  EXPECT_EQ(json["action"], "uninstall");
  EXPECT_EQ(json["activation_links_removed"], core::Json({"pdf-export"}));
  report.host = "codex";
  report.codex_trust = std::make_pair(std::size_t{4}, false);
  json = hooks_uninstall_json(report);
  EXPECT_EQ(json["trust_entries_removed"], 4);
  EXPECT_EQ(json["codex_config_restored"], false);
}

TEST(WireHooksTest, StatusHasTrustedOnlyForCodexAndNullWhenUnknown) {
  hooks::InstalledHooks installed;
  installed.file = "/p/.codex/hooks.json";
  installed.events = {"SessionStart"};
  installed.missing = {"Stop"};
  HooksStatusReport report{"claude-code", installed,    std::nullopt, std::nullopt,
                           false,         std::nullopt, std::nullopt, std::nullopt};
  core::Json json = hooks_status_json(report);
  EXPECT_EQ(keys_of(json),
            (std::set<std::string>{"host", "file", "installed", "events", "missing_events",
                                   "state_dir", "state_dir_default"}));
  EXPECT_EQ(json["installed"], false);
  EXPECT_TRUE(json["state_dir"].is_null());
  EXPECT_EQ(json["state_dir_default"], true);
  report.host = "codex";
  report.codex = true;
  report.project_trusted = true;
  report.trust_unknown = "codex is not on PATH";
  json = hooks_status_json(report);
  EXPECT_TRUE(json.at("trusted").is_null());
  EXPECT_EQ(json["trust_unknown"], "codex is not on PATH");
  EXPECT_EQ(json["project_trusted"], true);
  report.trust_unknown.reset();
  report.trusted = true;
  json = hooks_status_json(report);
  EXPECT_EQ(json["trusted"], true);
  EXPECT_FALSE(json.contains("trust_unknown"));
}

}  // namespace
}  // namespace ctx::runtime
