// Test helpers for the verifier cores: wire payloads and signing bytes made by the host's own
// codec (host/runtime/consent/assertion_codec), files in a TempDir, and running the real
// `openssl` / `ssh-keygen` binaries (found on PATH; a missing binary fails the test).
#ifndef CTX_TESTS_PLUGINS_VERIFIERS_SUPPORT_WIRE_FIXTURE_HPP_
#define CTX_TESTS_PLUGINS_VERIFIERS_SUPPORT_WIRE_FIXTURE_HPP_

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/runtime/consent/assertion_codec.hpp"

extern char** environ;

namespace ctx::testing {

inline runtime::SignedAssertionClaims sample_claims(const std::string& nonce = "nonce-1") {
  runtime::SignedAssertionClaims c;
  c.challenge_digest = std::string(64, 'c');
  c.decision = engine::Decision::kGranted;
  c.principal_digest = std::string(64, 'b');
  c.authenticator_id = "test-authenticator";
  c.audience = "ctx-managed-query";
  c.nonce = nonce;
  c.issued_at = "2026-08-03T12:00:00Z";
  c.expires_at = "2026-08-03T12:30:00Z";
  c.proof = "unsigned";
  return c;
}

// Exactly the bytes the consent broker passes to a verifier for `claims`.
inline std::string signing_bytes_of(runtime::SignedAssertionClaims claims) {
  if (claims.proof.empty()) claims.proof = "unsigned";
  return runtime::SignedAssertion::create(std::move(claims)).signing_bytes();
}

// The wire payload of `claims` carrying `proof`.
inline std::string payload_with(runtime::SignedAssertionClaims claims, std::string proof) {
  claims.proof = std::move(proof);
  return runtime::encode_signed_assertion(runtime::SignedAssertion::create(std::move(claims)));
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

// Runs `argv` (argv[0] searched on PATH) with stdin from /dev/null unless `stdin_path` is set;
// returns the exit status (-1 when it did not exit normally).
inline int run_tool(const std::vector<std::string>& argv, const std::string& stdin_path = "") {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(
      &actions, 0, stdin_path.empty() ? "/dev/null" : stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// run_tool that must succeed.
inline void must_run(const std::vector<std::string>& argv, const std::string& stdin_path = "") {
  const int status = run_tool(argv, stdin_path);
  if (status != 0) {
    std::ostringstream text;
    for (const std::string& a : argv) text << a << ' ';
    throw std::runtime_error("command failed (" + std::to_string(status) + "): " + text.str());
  }
}

}  // namespace ctx::testing

#endif  // CTX_TESTS_PLUGINS_VERIFIERS_SUPPORT_WIRE_FIXTURE_HPP_
