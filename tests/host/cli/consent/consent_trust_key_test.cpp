// `ctx consent trust --key FILE`, `ctx consent keys` and `ctx consent untrust FINGERPRINT` as real
// processes, with keys made by the real ssh-keygen and openssl: an ssh-ed25519 public key, an
// sk-ssh-ed25519@openssh.com public key (built per PROTOCOL.u2f from an Ed25519 key: there is no
// security key here) and an Ed25519 PEM public key are trusted with the verifier, authenticator
// and principal derived from them, listed with the fingerprint `ssh-keygen -l` prints, and their
// signed decisions grant the pending install; bad key files and unknown fingerprints fail with one
// stderr line and leave consent-verifiers.json byte-identical.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/crypto.hpp"
#include "host/runtime/consent/assertion_codec.hpp"
#include "tests/host/cli/consent/trusted_state_fixture.hpp"
#include "tests/host/cli/process_runner.hpp"
#include "tests/plugins/verifiers/sshsig/ssh_test_keys.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;
namespace keys = sshsig::testkeys;
using core::Json;
using ctx::testing::ctx_run;
using ctx::testing::CtxRun;
using ctx::testing::read_file;
using ctx::testing::run_process;
using ::testing::HasSubstr;

// The second field of `ssh-keygen -l -f FILE`: "256 SHA256:... comment (ED25519)".
std::string ssh_keygen_fingerprint(const fs::path& file) {
  const auto listed = run_process({"/usr/bin/ssh-keygen", "-l", "-f", file.string()}, "");
  EXPECT_EQ(listed.code, 0) << listed.err;
  std::istringstream words(listed.out);
  std::string bits;
  std::string fingerprint;
  words >> bits >> fingerprint;
  return fingerprint;
}

// The base64 blob of an OpenSSH public key line, decoded.
std::string blob_of_line(const std::string& line) {
  std::istringstream words(line);
  std::string type;
  std::string encoded;
  words >> type >> encoded;
  std::string blob(encoded.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(blob.data()),
                                reinterpret_cast<const unsigned char*>(encoded.data()),
                                static_cast<int>(encoded.size()));
  EXPECT_GE(n, 0);
  blob.resize(blob.size() -
              static_cast<std::size_t>(std::count(encoded.begin(), encoded.end(), '=')));
  return blob;
}

class ConsentTrustKeyTest : public ctx::testing::TrustedStateTest {
 protected:
  // The trusted state dir (its fixture key trusted the hand-written way), and one pending
  // challenge for the pdf-export install.
  void SetUp() override {
    TrustedStateTest::SetUp();
    if (HasFatalFailure()) return;
    const CtxRun prepared = ctx_run(
        with_state({"query", "prepare", "--work",
                    std::string(CTX_SOURCE_DIR) + "/examples/work/pdf-export.json", "--json"}));
    ASSERT_EQ(prepared.code, 0) << prepared.err;
    const CtxRun desired = ctx_run(
        with_state({"desired", "set", Json::parse(prepared.out).at("query_ref").get<std::string>(),
                    "skill:pdf-export", "--json"}));
    ASSERT_EQ(desired.code, 0) << desired.err;
    const Json result = Json::parse(desired.out);
    ASSERT_EQ(result.at("status"), "consent-required") << desired.out;
    challenge_ = result.at("challenge").at("challenge_digest");
    expires_at_ = result.at("challenge").at("expires_at");
  }

  fs::path ssh_keygen_ed25519(const std::string& name) const {
    const fs::path file = dir_ / name;
    const auto made = run_process({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                   "me@laptop", "-f", file.string()},
                                  "");
    EXPECT_EQ(made.code, 0) << made.err;
    return file;
  }

  fs::path write(const std::string& name, const std::string& bytes) const {
    const fs::path file = dir_ / name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

  std::string registry() const { return read_file(state_ / "consent-verifiers.json"); }

  // Expects `args` to fail with one stderr line holding `keyword`, changing no registration.
  void expect_refused(const std::vector<std::string>& args, const std::string& keyword) {
    const std::string before = registry();
    const CtxRun run = ctx_run(with_state(args));
    EXPECT_EQ(run.code, 1) << run.out;
    EXPECT_THAT(run.err, HasSubstr(keyword));
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(registry(), before);
  }

  Json keys_listed() const {
    const CtxRun listed = ctx_run(with_state({"consent", "keys", "--json"}));
    EXPECT_EQ(listed.code, 0) << listed.err;
    return Json::parse(listed.out).at("keys");
  }

  std::string challenge_;
  std::string expires_at_;
};

TEST_F(ConsentTrustKeyTest, AnSshEd25519PublicKeyIsTrustedWithWhatItDerivesAndApproves) {
  const fs::path key = ssh_keygen_ed25519("id_ed25519");
  const fs::path pub = dir_ / "id_ed25519.pub";
  const CtxRun trusted = ctx_run(with_state({"consent", "trust", "--key", pub.string(), "--json"}));
  ASSERT_EQ(trusted.code, 0) << trusted.err;
  const Json t = Json::parse(trusted.out);
  const std::string blob = blob_of_line(read_file(pub));
  EXPECT_EQ(t.at("verifier"), "sshsig");
  EXPECT_EQ(t.at("key_type"), "ssh-ed25519");
  EXPECT_EQ(t.at("audience"), "ctx-local");
  EXPECT_EQ(t.at("authenticator_id"), "sshsig:ssh-ed25519");
  EXPECT_EQ(t.at("principal_digest"), core::sha256_hex(blob)) << "the key blob's SHA-256";
  EXPECT_EQ(t.at("fingerprint"), ssh_keygen_fingerprint(pub));
  EXPECT_EQ(t.at("already_trusted"), false);

  // Listed with ssh-keygen's fingerprint, beside the fixture's hand-written PEM registration.
  const Json listed = keys_listed();
  ASSERT_EQ(listed.size(), 2u) << listed;
  bool found = false;
  for (const Json& k : listed) {
    if (k.at("fingerprint") == ssh_keygen_fingerprint(pub)) {
      found = true;
      EXPECT_EQ(k.at("key_type"), "ssh-ed25519");
      EXPECT_EQ(k.at("verifier"), "sshsig");
    }
  }
  EXPECT_TRUE(found) << listed;
  const CtxRun text = ctx_run(with_state({"consent", "keys"}));
  EXPECT_THAT(text.out, HasSubstr(ssh_keygen_fingerprint(pub) + " ssh-ed25519"));

  // Trusting it again changes nothing and says so.
  const std::string before = registry();
  const CtxRun again = ctx_run(with_state({"consent", "trust", "--key", pub.string(), "--json"}));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(Json::parse(again.out).at("already_trusted"), true);
  EXPECT_EQ(registry(), before);

  // The private key (ssh-keygen -Y sign) approves the pending install.
  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_EQ(Json::parse(approved.out).at("resolution").at("outcome"), "installed-inactive")
      << approved.out;
}

TEST_F(ConsentTrustKeyTest, AnSkEd25519PublicKeyIsTrustedAndATouchedSignatureGrants) {
  // PROTOCOL.u2f: string "sk-ssh-ed25519@openssh.com", string key (32 bytes), string application.
  const keys::Pkey key = keys::generate_ed25519();
  const std::string blob = keys::public_blob(key.get(), sshsig::KeyType::kSkEd25519, "ssh:");
  const fs::path pub =
      write("id_ed25519_sk.pub", keys::authorized_line(blob, sshsig::KeyType::kSkEd25519) + "\n");
  const std::string fingerprint = ssh_keygen_fingerprint(pub);
  ASSERT_THAT(fingerprint, ::testing::StartsWith("SHA256:"));

  const CtxRun trusted = ctx_run(with_state({"consent", "trust", "--key", pub.string(), "--json"}));
  ASSERT_EQ(trusted.code, 0) << trusted.err;
  const Json t = Json::parse(trusted.out);
  EXPECT_EQ(t.at("key_type"), "sk-ssh-ed25519@openssh.com");
  EXPECT_EQ(t.at("authenticator_id"), "sshsig:sk-ssh-ed25519@openssh.com");
  EXPECT_EQ(t.at("principal_digest"), core::sha256_hex(blob));
  EXPECT_EQ(t.at("fingerprint"), fingerprint);

  // What a touched security key returns for ssh-keygen -Y sign, over the assertion's signing
  // bytes: the pinned sshsig verifier checks it through the derived registration.
  runtime::SignedAssertionClaims claims;
  claims.challenge_digest = challenge_;
  claims.decision = engine::Decision::kGranted;
  claims.principal_digest = t.at("principal_digest");
  claims.authenticator_id = t.at("authenticator_id");
  claims.audience = "ctx-local";
  claims.nonce = core::random_hex(32);
  const core::SystemClock clock;
  const core::Timestamp now{clock.now().micros / 1'000'000 * 1'000'000};
  claims.issued_at = core::format_rfc3339(now);
  claims.expires_at = core::format_rfc3339(
      std::min(core::parse_rfc3339(expires_at_), core::Timestamp{now.micros + 600'000'000}));
  claims.proof = "unsigned";
  const std::string signing = runtime::SignedAssertion::create(claims).signing_bytes();
  // Without the user-presence flag the verifier refuses, and nothing is decided.
  keys::SigningOptions untouched;
  untouched.flags = 0x00;
  claims.proof =
      keys::armor(keys::sshsig_blob(key.get(), sshsig::KeyType::kSkEd25519, signing, untouched));
  const CtxRun refused =
      ctx_run(with_state({"consent", "resolve", "--assertion", "-"}),
              runtime::encode_signed_assertion(runtime::SignedAssertion::create(claims)));
  EXPECT_EQ(refused.code, 1) << refused.out;

  claims.nonce = core::random_hex(32);
  const std::string resigning = runtime::SignedAssertion::create(claims).signing_bytes();
  claims.proof = keys::armor(keys::sshsig_blob(key.get(), sshsig::KeyType::kSkEd25519, resigning));
  const CtxRun granted =
      ctx_run(with_state({"consent", "resolve", "--assertion", "-", "--json"}),
              runtime::encode_signed_assertion(runtime::SignedAssertion::create(claims)));
  ASSERT_EQ(granted.code, 0) << granted.err;
  EXPECT_EQ(Json::parse(granted.out).at("resolution").at("outcome"), "installed-inactive")
      << granted.out;
}

TEST_F(ConsentTrustKeyTest, AnEd25519PemPublicKeyIsTrustedAndItsPrivateKeyApproves) {
  // The fixture's key, first untrusted (it was trusted the hand-written way), then by its PEM.
  const auto pub = run_process({"/usr/bin/openssl", "pkey", "-in", key_.string(), "-pubout"}, "");
  ASSERT_EQ(pub.code, 0) << pub.err;
  const fs::path pem = write("decision.pub.pem", pub.out);
  const Json before = keys_listed();
  ASSERT_EQ(before.size(), 1u);
  const std::string fingerprint = before[0].at("fingerprint");
  const CtxRun untrusted = ctx_run(with_state({"consent", "untrust", fingerprint}));
  ASSERT_EQ(untrusted.code, 0) << untrusted.err;
  EXPECT_TRUE(keys_listed().empty());
  const CtxRun unknown =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string()}));
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("not trusted"));

  const CtxRun trusted = ctx_run(with_state({"consent", "trust", "--key", pem.string(), "--json"}));
  ASSERT_EQ(trusted.code, 0) << trusted.err;
  const Json t = Json::parse(trusted.out);
  EXPECT_EQ(t.at("verifier"), "ed25519");
  EXPECT_EQ(t.at("authenticator_id"), "ed25519:pem");
  EXPECT_EQ(t.at("fingerprint"), fingerprint) << "the same key, the same fingerprint";
  // The fingerprint is the one ssh-keygen gives the same key as an ssh-ed25519 line.
  const keys::Pkey pkey = keys::read_private_pem(read_file(key_));
  const std::string blob = keys::public_blob(pkey.get(), sshsig::KeyType::kEd25519);
  EXPECT_EQ(t.at("principal_digest"), core::sha256_hex(blob));
  const fs::path as_line =
      write("as_ssh.pub", keys::authorized_line(blob, sshsig::KeyType::kEd25519) + "\n");
  EXPECT_EQ(t.at("fingerprint"), ssh_keygen_fingerprint(as_line));

  const CtxRun approved =
      ctx_run(with_state({"consent", "approve", challenge_, "--key", key_.string(), "--json"}));
  ASSERT_EQ(approved.code, 0) << approved.err;
  EXPECT_EQ(Json::parse(approved.out).at("resolution").at("outcome"), "installed-inactive")
      << approved.out;
}

TEST_F(ConsentTrustKeyTest, BadKeyFilesAndUnknownFingerprintsChangeNothing) {
  ssh_keygen_ed25519("good");
  const std::string line = read_file(dir_ / "good.pub");
  const auto rsa = run_process({"/usr/bin/ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "",
                                "-f", (dir_ / "rsa").string()},
                               "");
  ASSERT_EQ(rsa.code, 0) << rsa.err;
  expect_refused({"consent", "trust", "--key", (dir_ / "rsa.pub").string()}, "of type ssh-rsa");

  std::istringstream words(line);
  std::string type;
  std::string encoded;
  words >> type >> encoded;
  // Cut short at a base64 quantum: valid base64, a blob that ends inside the key.
  const std::string cut = type + " " + encoded.substr(0, encoded.size() - 24) + "\n";
  expect_refused({"consent", "trust", "--key", write("cut.pub", cut).string()}, "truncated");
  expect_refused({"consent", "trust", "--key",
                  write("ragged.pub", type + " " + encoded.substr(0, 30) + "\n").string()},
                 "base64");
  // An ssh-ed25519 blob under the sk type name.
  expect_refused(
      {"consent", "trust", "--key",
       write("mislabelled.pub", "sk-ssh-ed25519@openssh.com " + encoded + "\n").string()},
      "another key type");
  expect_refused({"consent", "trust", "--key", write("two.pub", line + line).string()},
                 "more than one key");
  expect_refused({"consent", "trust", "--key",
                  write("big.pub", line + std::string(10 * 1024 * 1024, ' ')).string()},
                 "larger than 64 KiB");
  expect_refused({"consent", "trust", "--key", (dir_ / "missing.pub").string()},
                 "not a readable file");
  const auto rsa_pem = run_process(
      {"/usr/bin/ssh-keygen", "-e", "-m", "PKCS8", "-f", (dir_ / "rsa.pub").string()}, "");
  ASSERT_EQ(rsa_pem.code, 0) << rsa_pem.err;
  expect_refused({"consent", "trust", "--key", write("rsa.pem", rsa_pem.out).string()},
                 "not an Ed25519 key");

  expect_refused({"consent", "untrust", "SHA256:" + std::string(43, 'A')}, "no trusted key");
  expect_refused({"consent", "untrust", "MD5:aa:bb"}, "FINGERPRINT must be");

  // --key and the hand-written options exclude each other; without --key all are needed.
  const CtxRun both = ctx_run(with_state(
      {"consent", "trust", "--key", (dir_ / "good.pub").string(), "--verifier", "sshsig"}));
  EXPECT_EQ(both.code, 2) << both.err;
  const CtxRun half =
      ctx_run(with_state({"consent", "trust", "--principal", std::string(64, 'a')}));
  EXPECT_EQ(half.code, 2);
  EXPECT_THAT(half.err, HasSubstr("--authenticator is required"));
}

// ctx init --trust-key FILE trusts the key at setup (again: nothing changes); on a terminal a
// plain ctx init offers ~/.ssh/id_ed25519.pub while no key is trusted, and trusts it on "y".
TEST(ConsentInitTrustKeyTest, InitTrustsTheGivenKeyAndOffersTheUsersSshKeyOnATerminal) {
  ctx::testing::TempDir dir;
  const fs::path home = dir.path() / "home";
  fs::create_directories(home / ".ssh");
  const fs::path pub = home / ".ssh" / "id_ed25519.pub";
  const auto made = run_process({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                                 (home / ".ssh" / "id_ed25519").string()},
                                "");
  ASSERT_EQ(made.code, 0) << made.err;
  const std::string fingerprint = ssh_keygen_fingerprint(pub);

  const fs::path given = dir.path() / "given";
  const CtxRun init = ctx_run({"init", "--state", given.string(), "--trust-key", pub.string()});
  ASSERT_EQ(init.code, 0) << init.err;
  EXPECT_THAT(init.out, HasSubstr("trusted " + fingerprint + " (ssh-ed25519)"));
  const std::string registry = read_file(given / "consent-verifiers.json");
  const CtxRun again = ctx_run({"init", "--state", given.string(), "--trust-key", pub.string()});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("already trusted"));
  EXPECT_EQ(read_file(given / "consent-verifiers.json"), registry);
  const CtxRun bad = ctx_run({"init", "--state", (dir.path() / "bad").string(), "--trust-key",
                              (dir.path() / "missing.pub").string()});
  EXPECT_EQ(bad.code, 1);

  // Without a terminal nothing is asked or trusted.
  const fs::path quiet = dir.path() / "quiet";
  const auto piped = run_process(
      {"/usr/bin/env", "HOME=" + home.string(), CTX_BINARY, "init", "--state", quiet.string()},
      "y\n");
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_FALSE(fs::exists(quiet / "consent-verifiers.json"));

  // On a terminal (script(1) gives ctx a pty), "y" trusts the user's key.
  const fs::path offered = dir.path() / "offered";
  const auto asked =
      run_process({"/usr/bin/env", "HOME=" + home.string(), "/usr/bin/script", "-qec",
                   std::string(CTX_BINARY) + " init --state " + offered.string(), "/dev/null"},
                  "y\n", std::chrono::seconds(60));
  ASSERT_EQ(asked.code, 0) << asked.out << asked.err;
  EXPECT_THAT(asked.out, HasSubstr("trust your SSH key"));
  EXPECT_THAT(asked.out, HasSubstr(fingerprint));
  const CtxRun listed = ctx_run({"consent", "keys", "--json", "--state", offered.string()});
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_EQ(Json::parse(listed.out).at("keys").at(0).at("fingerprint"), fingerprint);
}

}  // namespace
}  // namespace ctx::cli
