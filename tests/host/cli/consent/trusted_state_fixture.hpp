// A state dir for the consent CLI tests, made through the real ctx binary: `ctx init`, the example
// catalog imported, a fresh Ed25519 decision key (openssl, 0600) and its public key trusted for
// (audience ctx-local, authenticator laptop, principal 64×'a') with the ed25519 verifier.
#ifndef CTX_TESTS_HOST_CLI_CONSENT_TRUSTED_STATE_FIXTURE_HPP_
#define CTX_TESTS_HOST_CLI_CONSENT_TRUSTED_STATE_FIXTURE_HPP_

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/host/cli/process_runner.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::testing {

class TrustedStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_ / "state";
    const std::string s = state_.string();
    ASSERT_EQ(ctx_run({"init", "--state", s}).code, 0);
    ASSERT_EQ(ctx_run({"catalog", "import", std::string(CTX_SOURCE_DIR) + "/examples/catalog",
                       "--state", s})
                  .code,
              0);
    key_ = dir_ / "decision-key.pem";
    const auto made = run_process(
        {"/usr/bin/openssl", "genpkey", "-algorithm", "ed25519", "-out", key_.string()}, "");
    ASSERT_EQ(made.code, 0) << made.err;
    ::chmod(key_.c_str(), 0600);
    const auto pub = run_process({"/usr/bin/openssl", "pkey", "-in", key_.string(), "-pubout"}, "");
    ASSERT_EQ(pub.code, 0) << pub.err;
    std::ofstream(dir_ / "verifier.json") << nlohmann::json{{"public_key_pem", pub.out}}.dump();
    const CtxRun trusted =
        ctx_run({"consent", "trust", "--audience", "ctx-local", "--authenticator", "laptop",
                 "--principal", std::string(64, 'a'), "--verifier", "ed25519", "--config",
                 (dir_ / "verifier.json").string(), "--state", s});
    ASSERT_EQ(trusted.code, 0) << trusted.err;
  }

  std::vector<std::string> with_state(std::vector<std::string> args) const {
    args.push_back("--state");
    args.push_back(state_.string());
    return args;
  }
  // The example catalog's pdf-export SKILL.md, as imported.
  static std::string catalog_skill() {
    return read_file(std::filesystem::path(CTX_SOURCE_DIR) /
                     "examples/catalog/skills/pdf-export/SKILL.md");
  }

  // Expects the journal's install outcomes to be exactly one, "applied", that observed the
  // material identity `expected` (read behind the store's back).
  void expect_one_applied_install_outcome(const std::string& expected) const {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2((state_ / "service" / "journal.sqlite3").c_str(), &db,
                              SQLITE_OPEN_READONLY, nullptr),
              SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(
            db, "SELECT outcome, observed_material_identity_digest FROM engine_install_outcomes",
            -1, &stmt, nullptr),
        SQLITE_OK);
    std::vector<std::pair<std::string, std::string>> outcomes;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      outcomes.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)),
                            reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    EXPECT_EQ(outcomes, (std::vector<std::pair<std::string, std::string>>{{"applied", expected}}));
  }

  TempDir dir_;
  std::filesystem::path state_;
  std::filesystem::path key_;
};

}  // namespace ctx::testing

#endif  // CTX_TESTS_HOST_CLI_CONSENT_TRUSTED_STATE_FIXTURE_HPP_
