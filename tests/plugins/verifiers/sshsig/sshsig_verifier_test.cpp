#include "plugins/verifiers/sshsig/core/sshsig_verifier.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <barrier>
#include <ctx/sdk/error.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "plugins/verifiers/sshsig/core/ssh_wire.hpp"
#include "tests/plugins/verifiers/sshsig/ssh_test_keys.hpp"
#include "tests/plugins/verifiers/support/wire_fixture.hpp"
#include "tests/support/expect_throw.hpp"
#include "tests/support/temp_dir.hpp"

namespace ctx::sshsig {
namespace {

namespace tk = testkeys;
using ::testing::HasSubstr;
using testing::must_run;
using ::testing::Not;
using testing::payload_with;
using testing::read_file;
using testing::run_tool;
using testing::sample_claims;
using testing::signing_bytes_of;
using testing::write_file;

std::string config_of(const std::string& line) {
  return nlohmann::json{{"public_key", line}}.dump();
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Keys made by the real ssh-keygen (alice: ed25519, ecdsa, rsa; mallory: ed25519) and signatures
// made by `ssh-keygen -Y sign`. Security-key vectors are built with OpenSSL (ssh_test_keys.hpp)
// and cross-checked with `ssh-keygen -Y verify`.
class SshsigVerifierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    const std::vector<std::vector<std::string>> keys = {
        {"alice-ed25519", "-t", "ed25519"},
        {"alice-ecdsa", "-t", "ecdsa", "-b", "256"},
        {"alice-rsa", "-t", "rsa", "-b", "2048", "-m", "PEM"},
        {"mallory-ed25519", "-t", "ed25519"},
    };
    for (const auto& spec : keys) {
      std::vector<std::string> argv = {"ssh-keygen",      "-q", "-N",         "", "-C",
                                       spec[0] + "@test", "-f", path(spec[0])};
      argv.insert(argv.end(), spec.begin() + 1, spec.end());
      must_run(argv);
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string public_line(const std::string& key) {
    return first_line(read_file(path(key) + ".pub"));
  }
  // `ssh-keygen -Y sign -f KEY -n NS [-O hashalg=H] FILE` over `message`; returns the armor.
  static std::string keygen_sign(const std::string& key, const std::string& message,
                                 const std::string& ns = "ctx-consent",
                                 const std::string& hash = "") {
    const std::string file = path("message");
    write_file(file, message);
    std::filesystem::remove(file + ".sig");
    std::vector<std::string> argv = {"ssh-keygen", "-Y", "sign", "-f", path(key), "-n", ns};
    if (!hash.empty()) argv.insert(argv.end(), {"-O", "hashalg=" + hash});
    argv.push_back(file);
    must_run(argv);
    return read_file(file + ".sig");
  }
  // `ssh-keygen -Y verify` of `armored` over `message` for the key `line`; its exit status.
  static int keygen_verify(const std::string& line, const std::string& message,
                           const std::string& armored) {
    write_file(path("allowed_signers"), "signer@test " + line + "\n");
    write_file(path("verify.msg"), message);
    write_file(path("verify.sig"), armored);
    return run_tool({"ssh-keygen", "-Y", "verify", "-f", path("allowed_signers"), "-I",
                     "signer@test", "-n", "ctx-consent", "-s", path("verify.sig")},
                    path("verify.msg"));
  }

  static Verdict check(const std::string& line, const std::string& armored,
                       const std::string& signing_bytes = signing_bytes_of(sample_claims()),
                       const runtime::SignedAssertionClaims& claims = sample_claims()) {
    return SshsigVerifier(config_of(line)).check(payload_with(claims, armored), signing_bytes);
  }

  static testing::TempDir* dir_;
};

testing::TempDir* SshsigVerifierTest::dir_ = nullptr;

const char* const kKeygenKeys[] = {"alice-ed25519", "alice-ecdsa", "alice-rsa"};

std::string altered_byte(std::string bytes, std::size_t at) {
  bytes[at] = static_cast<char>(bytes[at] ^ 0x04);
  return bytes;
}

TEST_F(SshsigVerifierTest, AcceptsSshKeygenSignaturesForEveryKeyTypeAndHash) {
  const std::string bytes = signing_bytes_of(sample_claims());
  for (const char* key : kKeygenKeys) {
    for (const std::string hash : {"", "sha256", "sha512"}) {
      const std::string armored = keygen_sign(key, bytes, "ctx-consent", hash);
      EXPECT_EQ(check(public_line(key), armored), Verdict::kAccepted) << key << " " << hash;
    }
  }
}

TEST_F(SshsigVerifierTest, RejectsOneAlteredSigningByte) {
  const std::string bytes = signing_bytes_of(sample_claims());
  for (const char* key : kKeygenKeys) {
    const std::string armored = keygen_sign(key, bytes);
    for (const std::size_t at : {std::size_t{0}, bytes.size() / 2, bytes.size() - 1}) {
      EXPECT_EQ(check(public_line(key), armored, altered_byte(bytes, at)), Verdict::kBadSignature)
          << key << " byte " << at;
    }
  }
}

TEST_F(SshsigVerifierTest, RejectsAnotherKey) {
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string by_mallory = keygen_sign("mallory-ed25519", bytes);
  EXPECT_EQ(check(public_line("mallory-ed25519"), by_mallory), Verdict::kAccepted);
  for (const char* key : kKeygenKeys) {
    EXPECT_EQ(check(public_line(key), by_mallory), Verdict::kWrongKey) << key;
  }
}

TEST_F(SshsigVerifierTest, RejectsAnotherNamespace) {
  const std::string bytes = signing_bytes_of(sample_claims());
  for (const std::string ns : {"file", "git", "ctx-consent2", "ctx"}) {
    EXPECT_EQ(check(public_line("alice-ed25519"), keygen_sign("alice-ed25519", bytes, ns)),
              Verdict::kWrongNamespace)
        << ns;
  }
}

TEST_F(SshsigVerifierTest, RejectsASignatureOverOtherClaims) {
  runtime::SignedAssertionClaims denied = sample_claims();
  denied.decision = engine::Decision::kDenied;
  const std::string denied_bytes = signing_bytes_of(denied);
  const std::string armored = keygen_sign("alice-ecdsa", denied_bytes);
  EXPECT_EQ(check(public_line("alice-ecdsa"), armored, denied_bytes, denied), Verdict::kAccepted);
  EXPECT_EQ(check(public_line("alice-ecdsa"), armored, denied_bytes, sample_claims()),
            Verdict::kClaimsMismatch);
}

TEST_F(SshsigVerifierTest, RsaAcceptsSha2_256And512ButNotSha1Signatures) {
  const tk::Pkey key = tk::read_private_pem(read_file(path("alice-rsa")));
  const std::string line = public_line("alice-rsa");
  const std::string bytes = signing_bytes_of(sample_claims());
  for (const std::string algorithm : {"rsa-sha2-256", "rsa-sha2-512"}) {
    tk::SigningOptions o;
    o.algorithm = algorithm;
    const std::string armored = tk::armor(tk::sshsig_blob(key.get(), KeyType::kRsa, bytes, o));
    EXPECT_EQ(keygen_verify(line, bytes, armored), 0) << "ssh-keygen disagrees: " << algorithm;
    EXPECT_EQ(check(line, armored), Verdict::kAccepted) << algorithm;
  }
  tk::SigningOptions sha1;
  sha1.algorithm = "ssh-rsa";
  EXPECT_EQ(check(line, tk::armor(tk::sshsig_blob(key.get(), KeyType::kRsa, bytes, sha1))),
            Verdict::kWrongAlgorithm);
}

TEST_F(SshsigVerifierTest, RsaSignaturesWithoutTheirLeadingZeroAreAcceptedAsOpensshDoes) {
  const tk::Pkey key = tk::read_private_pem(read_file(path("alice-rsa")));
  const std::string line = public_line("alice-rsa");
  const std::string blob = tk::public_blob(key.get(), KeyType::kRsa);
  const auto armored = [&](const std::string& signature) {
    SshWriter field;
    field.string("rsa-sha2-512").string(signature);
    SshWriter out;
    out.raw(kMagic)
        .uint32(kVersion)
        .string(blob)
        .string(kNamespace)
        .string("")
        .string("sha512")
        .string(field.bytes());
    return tk::armor(out.bytes());
  };
  // PKCS#1 v1.5 is deterministic: vary the claims until a signature starts with a zero byte.
  for (int i = 0; i < 4096; ++i) {
    const runtime::SignedAssertionClaims claims = sample_claims("nonce-" + std::to_string(i));
    const std::string bytes = signing_bytes_of(claims);
    const std::string data =
        sshsig_signed_data(kNamespace, "", "sha512", tk::hash(EVP_sha512(), bytes));
    const std::string signature = tk::sign_raw(key.get(), data, EVP_sha512());
    if (signature[0] != '\0') continue;
    const std::string stripped = armored(signature.substr(1));
    EXPECT_EQ(keygen_verify(line, bytes, stripped), 0) << "ssh-keygen disagrees";
    EXPECT_EQ(check(line, stripped, bytes, claims), Verdict::kAccepted);
    EXPECT_EQ(check(line, armored(signature), bytes, claims), Verdict::kAccepted);
    CTX_EXPECT_THROW(check(line, armored(std::string(1, '\0') + signature), bytes, claims),
                     InvalidArgument, "longer than the modulus");
    return;
  }
  FAIL() << "no signature with a leading zero byte in 4096 tries";
}

TEST_F(SshsigVerifierTest, RejectsUnsupportedHashesAndMismatchedAlgorithms) {
  const tk::Pkey key = tk::generate_ed25519();
  const std::string blob = tk::public_blob(key.get(), KeyType::kEd25519);
  const std::string line = tk::authorized_line(blob, KeyType::kEd25519);
  const std::string bytes = signing_bytes_of(sample_claims());
  tk::SigningOptions md5;
  md5.hash_algorithm = "md5";
  EXPECT_EQ(check(line, tk::armor(tk::sshsig_blob(key.get(), KeyType::kEd25519, bytes, md5))),
            Verdict::kUnsupportedHash);
  tk::SigningOptions other;
  other.algorithm = "ecdsa-sha2-nistp256";
  EXPECT_EQ(check(line, tk::armor(tk::sshsig_blob(key.get(), KeyType::kEd25519, bytes, other))),
            Verdict::kWrongAlgorithm);
  // The reserved field is ignored (PROTOCOL.sshsig) but still signed.
  tk::SigningOptions reserved;
  reserved.reserved = "future";
  EXPECT_EQ(check(line, tk::armor(tk::sshsig_blob(key.get(), KeyType::kEd25519, bytes, reserved))),
            Verdict::kAccepted);
}

// Security keys: vectors from an OpenSSL key standing in for the hardware.
struct SkCase {
  KeyType type;
  tk::Pkey key;
  std::string line;
};

std::vector<SkCase> sk_cases() {
  std::vector<SkCase> out;
  for (const KeyType type : {KeyType::kSkEd25519, KeyType::kSkEcdsaP256}) {
    SkCase c{type, type == KeyType::kSkEd25519 ? tk::generate_ed25519() : tk::generate_p256(), ""};
    c.line = tk::authorized_line(tk::public_blob(c.key.get(), type), type);
    out.push_back(std::move(c));
  }
  return out;
}

TEST_F(SshsigVerifierTest, SecurityKeySignaturesWithUserPresenceAreAcceptedAsSshKeygenDoes) {
  const std::string bytes = signing_bytes_of(sample_claims());
  for (const SkCase& c : sk_cases()) {
    for (const std::string hash : {"sha256", "sha512"}) {
      tk::SigningOptions o;
      o.hash_algorithm = hash;
      const std::string armored = tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes, o));
      EXPECT_EQ(keygen_verify(c.line, bytes, armored), 0)
          << "ssh-keygen rejects our vector: " << key_type_name(c.type);
      EXPECT_EQ(check(c.line, armored), Verdict::kAccepted) << key_type_name(c.type);
    }
  }
}

TEST_F(SshsigVerifierTest, SecurityKeySignatureWithoutUserPresenceIsRejected) {
  const std::string bytes = signing_bytes_of(sample_claims());
  for (const SkCase& c : sk_cases()) {
    // Validly signed over flags 0x04 (user verified, not present): the signature itself is good
    // (ssh-keygen -Y verify accepts it: it only logs sk flags; presence is sshd's policy), and
    // we refuse it for the missing presence alone.
    tk::SigningOptions cleared;
    cleared.flags = 0x04;
    const std::string armored = tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes, cleared));
    EXPECT_EQ(keygen_verify(c.line, bytes, armored), 0) << key_type_name(c.type);
    EXPECT_EQ(check(c.line, armored), Verdict::kUserPresenceMissing) << key_type_name(c.type);
    // Signed with presence, flag cleared afterwards.
    tk::SigningOptions stripped;
    stripped.signed_flags = 0x01;
    stripped.flags = 0x00;
    EXPECT_EQ(check(c.line, tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes, stripped))),
              Verdict::kUserPresenceMissing);
    // Signed without presence, flag set afterwards: the signature no longer verifies.
    tk::SigningOptions forged;
    forged.signed_flags = 0x00;
    forged.flags = 0x01;
    EXPECT_EQ(check(c.line, tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes, forged))),
              Verdict::kBadSignature);
  }
}

TEST_F(SshsigVerifierTest, SecurityKeyRejectsAlteredBytesAnotherKeyNamespaceApplication) {
  const std::string bytes = signing_bytes_of(sample_claims());
  std::vector<SkCase> cases = sk_cases();
  std::vector<SkCase> others = sk_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const SkCase& c = cases[i];
    const std::string good = tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes));
    EXPECT_EQ(check(c.line, good, altered_byte(bytes, bytes.size() / 3)), Verdict::kBadSignature);
    EXPECT_EQ(check(others[i].line, good), Verdict::kWrongKey);
    tk::SigningOptions ns;
    ns.ns = "file";
    EXPECT_EQ(check(c.line, tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes, ns))),
              Verdict::kWrongNamespace);
    tk::SigningOptions app;
    app.signed_application = "ssh:other";
    EXPECT_EQ(check(c.line, tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes, app))),
              Verdict::kBadSignature);
    // The counter is covered by the signature.
    const std::string blob = tk::sshsig_blob(c.key.get(), c.type, bytes);
    std::string bumped = blob;
    bumped[bumped.size() - 1] = static_cast<char>(bumped[bumped.size() - 1] ^ 0x01);
    EXPECT_EQ(check(c.line, tk::armor(bumped)), Verdict::kBadSignature);
  }
}

TEST_F(SshsigVerifierTest, MalformedArmorIsATypedRejection) {
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string line = public_line("alice-ed25519");
  const std::string armored = keygen_sign("alice-ed25519", bytes);
  const SshsigVerifier verifier(config_of(line));
  const auto payload = [](const std::string& proof) {
    return payload_with(sample_claims(), proof);
  };
  const std::vector<std::string> broken = {
      "not armor",
      armored.substr(1),
      armored.substr(0, armored.size() - 10),
      "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n",
      "-----BEGIN SSH SIGNATURE-----\n\n-----END SSH SIGNATURE-----\n",
      std::string(armored).insert(40, "*"),
      std::string(armored).insert(30, "\n"),
      armored + "trailing",
      "-----BEGIN SSH SIGNATURE-----" + armored.substr(armored.find('\n') + 1),
  };
  for (const std::string& text : broken) {
    CTX_EXPECT_THROW((void)verifier.check(payload(text), bytes), InvalidArgument, "ssh signature");
  }
  // The armor without its final newline is the same signature.
  EXPECT_EQ(verifier.check(payload(armored.substr(0, armored.size() - 1)), bytes),
            Verdict::kAccepted);
}

TEST_F(SshsigVerifierTest, MalformedBlobsAreTypedRejectionsNeverCrashes) {
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string line = public_line("alice-ecdsa");
  const SshsigVerifier verifier(config_of(line));
  const std::string blob = dearmor(keygen_sign("alice-ecdsa", bytes));
  const auto verdict_of = [&](const std::string& b) {
    return verifier.check(payload_with(sample_claims(), tk::armor(b)), bytes);
  };
  ASSERT_EQ(verdict_of(blob), Verdict::kAccepted);
  // Every truncation.
  for (std::size_t size = 1; size < blob.size(); ++size) {
    CTX_EXPECT_THROW((void)verdict_of(blob.substr(0, size)), InvalidArgument, "ssh signature")
        << size;
  }
  std::string magic = blob;
  magic[0] = 'X';
  CTX_EXPECT_THROW((void)verdict_of(magic), InvalidArgument, "wrong magic");
  std::string version = blob;
  version[9] = '\x02';
  CTX_EXPECT_THROW((void)verdict_of(version), InvalidArgument, "version");
  CTX_EXPECT_THROW((void)verdict_of(blob + '\0'), InvalidArgument, "trailing bytes");
  // Wild lengths in the public-key length field (offset 10).
  for (const std::uint32_t wild :
       {0xffffffffu, 0x7fffffffu, 0x01000000u, static_cast<std::uint32_t>(blob.size())}) {
    std::string b = blob;
    for (int i = 0; i < 4; ++i) b[10 + i] = static_cast<char>(wild >> (24 - 8 * i));
    CTX_EXPECT_THROW((void)verdict_of(b), InvalidArgument, "ssh signature") << wild;
  }
  // Flip each byte in turn: a typed error or a rejection, never acceptance, never a crash.
  std::map<std::string, int> outcomes;
  for (std::size_t i = 0; i < blob.size(); ++i) {
    std::string b = blob;
    b[i] = static_cast<char>(b[i] ^ 0x41);
    try {
      const Verdict v = verdict_of(b);
      EXPECT_NE(v, Verdict::kAccepted) << "byte " << i;
      ++outcomes[verdict_name(v)];
    } catch (const InvalidArgument&) {
      ++outcomes["invalid-argument"];
    }
  }
  EXPECT_GT(outcomes["invalid-argument"], 0);
  EXPECT_GT(outcomes["bad-signature"], 0);
  EXPECT_GT(outcomes["wrong-key"], 0);
}

TEST_F(SshsigVerifierTest, MalformedSignatureFieldsAreTypedRejections) {
  const tk::Pkey ec = tk::generate_p256();
  const std::string ec_blob = tk::public_blob(ec.get(), KeyType::kEcdsaP256);
  const SshsigVerifier verifier(config_of(tk::authorized_line(ec_blob, KeyType::kEcdsaP256)));
  const std::string bytes = signing_bytes_of(sample_claims());
  const auto with_field = [&](const std::string& field) {
    SshWriter out;
    out.raw(kMagic)
        .uint32(kVersion)
        .string(ec_blob)
        .string(kNamespace)
        .string("")
        .string("sha512")
        .string(field);
    return verifier.check(payload_with(sample_claims(), tk::armor(out.bytes())), bytes);
  };
  const auto field = [](std::string_view alg, std::string_view sig) {
    SshWriter w;
    w.string(alg).string(sig);
    return w.bytes();
  };
  SshWriter negative;
  negative.string(std::string("\x80\x01", 2)).mpint_unsigned("\x01");
  CTX_EXPECT_THROW((void)with_field(field("ecdsa-sha2-nistp256", negative.bytes())),
                   InvalidArgument, "negative");
  SshWriter padded;
  padded.string(std::string("\x00\x01", 2)).mpint_unsigned("\x01");
  CTX_EXPECT_THROW((void)with_field(field("ecdsa-sha2-nistp256", padded.bytes())), InvalidArgument,
                   "non-minimal");
  SshWriter huge;
  huge.mpint_unsigned(std::string(40, '\x7f')).mpint_unsigned("\x01");
  CTX_EXPECT_THROW((void)with_field(field("ecdsa-sha2-nistp256", huge.bytes())), InvalidArgument,
                   "out-of-range");
  SshWriter zero;
  zero.mpint_unsigned("").mpint_unsigned("\x01");
  CTX_EXPECT_THROW((void)with_field(field("ecdsa-sha2-nistp256", zero.bytes())), InvalidArgument,
                   "out-of-range");
  CTX_EXPECT_THROW((void)with_field(field("ecdsa-sha2-nistp256", "") + "x"), InvalidArgument,
                   "trailing bytes");
  CTX_EXPECT_THROW((void)with_field(std::string("\x00\x00\x00\x05", 4) + "ecdsa"), InvalidArgument,
                   "truncated");
  // A well-formed but wrong (r, s) verifies false.
  SshWriter ones;
  ones.mpint_unsigned("\x01").mpint_unsigned("\x01");
  EXPECT_EQ(with_field(field("ecdsa-sha2-nistp256", ones.bytes())), Verdict::kBadSignature);
}

TEST_F(SshsigVerifierTest, OneInstanceVerifiesFromManyThreadsAtOnce) {
  const SkCase c = std::move(sk_cases()[1]);
  const SshsigVerifier verifier(config_of(c.line));
  const std::string bytes = signing_bytes_of(sample_claims());
  const std::string good =
      payload_with(sample_claims(), tk::armor(tk::sshsig_blob(c.key.get(), c.type, bytes)));
  const std::string other = altered_byte(bytes, 5);
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::vector<int> accepted(kThreads, 0);
  std::vector<int> rejected(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < 50; ++i) {
        accepted[t] += verifier.verify(good, bytes) ? 1 : 0;
        rejected[t] += verifier.check(good, other) == Verdict::kBadSignature ? 1 : 0;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(accepted[t], 50) << t;
    EXPECT_EQ(rejected[t], 50) << t;
  }
}

TEST_F(SshsigVerifierTest, PayloadErrorsAreTypedAndDoNotEchoInput) {
  const SshsigVerifier verifier(config_of(public_line("alice-ed25519")));
  const std::string bytes = signing_bytes_of(sample_claims());
  CTX_EXPECT_THROW((void)verifier.check("", bytes), InvalidArgument, "not valid json");
  CTX_EXPECT_THROW((void)verifier.check("{}", bytes), InvalidArgument, "proof_base64");
  try {
    (void)verifier.check(payload_with(sample_claims(), "secret-proof-text"), bytes);
    FAIL() << "expected malformed armor";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), Not(HasSubstr("secret-proof-text")));
  }
}

}  // namespace
}  // namespace ctx::sshsig
