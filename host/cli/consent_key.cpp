#include "host/cli/consent_key.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "host/core/crypto.hpp"
#include "host/core/error.hpp"

namespace ctx::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxKeyFileBytes = 64 * 1024;
constexpr std::int64_t kAssertionLifetimeMicros = 10LL * 60 * 1'000'000;

struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string read_small_file(const fs::path& file, std::string_view what) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw NotFound(std::string(what) + " " + file.string() + " is not a readable file");
  }
  if (fs::file_size(file, ec) > kMaxKeyFileBytes) {
    throw InvalidArgument(std::string(what) + " " + file.string() + " is larger than 64 KiB");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SystemError("cannot read " + file.string() + ": " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  const auto end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

// "TYPE BASE64" of an authorized_keys-style line (the comment dropped), or nullopt.
std::optional<std::string> ssh_public_text(std::string_view line) {
  std::istringstream in{std::string(trim(line))};
  std::string type;
  std::string blob;
  if (!(in >> type >> blob)) return std::nullopt;
  const bool known =
      type.rfind("ssh-", 0) == 0 || type.rfind("ecdsa-", 0) == 0 || type.rfind("sk-", 0) == 0;
  if (!known || blob.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789+/=") != std::string::npos) {
    return std::nullopt;
  }
  return type + " " + blob;
}

Pkey read_private_pem(const std::string& pem, const fs::path& file) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw SystemError("openssl could not allocate");
  // nullptr callback: OpenSSL's default asks for a passphrase on the terminal when needed.
  Pkey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key)
    throw InvalidArgument("key file " + file.string() + " is not a readable PEM private key");
  if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
    throw InvalidArgument("key file " + file.string() + " is not an Ed25519 key");
  }
  return key;
}

std::string public_pem_of(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1) {
    throw SystemError("openssl could not write the public key");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

Pkey read_public_pem(std::string_view pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  Pkey key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return key;
}

// Runs `argv` (no shell), stdin and stderr inherited; stdout captured when `out` is given, else
// discarded. Returns the exit status (-1 for a signal).
int run_program(const std::vector<std::string>& argv, std::string* out) {
  int pipe_fds[2] = {-1, -1};
  if (out != nullptr && ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw SystemError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    const int target = out != nullptr ? pipe_fds[1] : ::open("/dev/null", O_WRONLY);
    if (target < 0 || ::dup2(target, STDOUT_FILENO) < 0) ::_exit(126);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  if (out != nullptr) {
    ::close(pipe_fds[1]);
    char chunk[4096];
    for (;;) {
      const ssize_t n = ::read(pipe_fds[0], chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (out->size() < kMaxKeyFileBytes) out->append(chunk, static_cast<std::size_t>(n));
    }
    ::close(pipe_fds[0]);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A private scratch directory (0700) removed on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp == '/' ? tmp : "/tmp") + "/ctx-consent-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw SystemError(std::string("cannot create a scratch directory: ") + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Standard padded base64 that re-encodes to exactly `text`, or nullopt.
std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0 || text.size() > kMaxKeyFileBytes) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<std::size_t>(n) != out.size()) return std::nullopt;
  std::size_t padding = 0;
  if (text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  out.resize(out.size() - padding);
  if (base64_encode(out) != text) return std::nullopt;
  return out;
}

// RFC 4251 §5 fields of a public key blob, every length checked against what is left.
class BlobReader {
 public:
  BlobReader(std::string_view bytes, const fs::path& file) : rest_(bytes), file_(file) {}
  std::string_view string() {
    if (rest_.size() < 4) truncated();
    const auto* p = reinterpret_cast<const unsigned char*>(rest_.data());
    const std::size_t size = (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) |
                             (std::size_t{p[2]} << 8) | std::size_t{p[3]};
    rest_.remove_prefix(4);
    if (size > rest_.size()) truncated();
    const std::string_view field = rest_.substr(0, size);
    rest_.remove_prefix(size);
    return field;
  }
  bool empty() const noexcept { return rest_.empty(); }

 private:
  [[noreturn]] void truncated() const {
    throw InvalidArgument("public key " + file_.string() + " is truncated");
  }
  std::string_view rest_;
  const fs::path& file_;
};

std::string ssh_string(std::string_view bytes) {
  const auto size = static_cast<std::uint32_t>(bytes.size());
  std::string out{static_cast<char>(size >> 24), static_cast<char>(size >> 16),
                  static_cast<char>(size >> 8), static_cast<char>(size)};
  out.append(bytes);
  return out;
}

constexpr std::string_view kSshEd25519 = "ssh-ed25519";
constexpr std::string_view kSkSshEd25519 = "sk-ssh-ed25519@openssh.com";
constexpr std::size_t kEd25519KeyBytes = 32;
constexpr std::size_t kMaxApplicationBytes = 256;

// The raw 32-byte public key of an Ed25519 EVP key.
std::string raw_ed25519(EVP_PKEY* key) {
  std::array<unsigned char, kEd25519KeyBytes> raw{};
  std::size_t size = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, raw.data(), &size) != 1 || size != raw.size()) {
    ERR_clear_error();
    throw SystemError("openssl could not read the Ed25519 public key");
  }
  return std::string(reinterpret_cast<const char*>(raw.data()), size);
}

// An Ed25519 public key of exactly 32 bytes that OpenSSL takes as one.
void check_ed25519_point(std::string_view raw, const fs::path& file) {
  const Pkey key(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
  ERR_clear_error();
  if (raw.size() != kEd25519KeyBytes || !key) {
    throw InvalidArgument("public key " + file.string() + " holds no valid Ed25519 key");
  }
}

TrustKey trust_key_of_pem(EVP_PKEY* key, const fs::path& file) {
  if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
    throw InvalidArgument("public key " + file.string() +
                          " is not an Ed25519 key (consent trust --key takes ssh-ed25519, "
                          "sk-ssh-ed25519@openssh.com or an Ed25519 PEM key)");
  }
  const std::string blob = ssh_string(kSshEd25519) + ssh_string(raw_ed25519(key));
  TrustKey out;
  out.key_type = "ed25519";
  out.verifier_id = "ed25519";
  out.config = core::Json{{"public_key_pem", public_pem_of(key)}};
  out.authenticator_id = "ed25519:pem";
  out.principal_digest = core::sha256_hex(blob);
  out.fingerprint = ssh_fingerprint(blob);
  return out;
}

// One OpenSSH public key line of an accepted type.
TrustKey trust_key_of_line(std::string_view text, const fs::path& file) {
  std::istringstream lines{std::string(text)};
  std::string line;
  std::string only;
  while (std::getline(lines, line)) {
    if (trim(line).empty()) continue;
    if (!only.empty()) {
      throw InvalidArgument("public key " + file.string() + " holds more than one key line");
    }
    only = trim(line);
  }
  std::istringstream words(only);
  std::string type;
  std::string encoded;
  if (!(words >> type >> encoded)) {
    throw InvalidArgument("key file " + file.string() +
                          " is neither an OpenSSH public key line nor an Ed25519 PEM key");
  }
  const bool known_shape = std::all_of(type.begin(), type.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '@' || c == '.';
  });
  if (!known_shape || type.size() > 64) {
    throw InvalidArgument("key file " + file.string() + " does not start with an SSH key type");
  }
  if (type != kSshEd25519 && type != kSkSshEd25519) {
    throw InvalidArgument("public key " + file.string() + " is of type " + type +
                          "; consent trust --key takes ssh-ed25519, sk-ssh-ed25519@openssh.com "
                          "or an Ed25519 PEM key");
  }
  const auto blob = base64_decode(encoded);
  if (!blob) {
    throw InvalidArgument("public key " + file.string() + " is not valid base64 (truncated?)");
  }
  BlobReader reader(*blob, file);
  if (reader.string() != type) {
    throw InvalidArgument("public key " + file.string() + " names another key type inside");
  }
  check_ed25519_point(reader.string(), file);
  if (type == kSkSshEd25519) {
    const std::string_view application = reader.string();
    if (application.empty() || application.size() > kMaxApplicationBytes) {
      throw InvalidArgument("public key " + file.string() +
                            " has no valid security key application");
    }
  }
  if (!reader.empty()) {
    throw InvalidArgument("public key " + file.string() + " has bytes after the key");
  }
  TrustKey out;
  out.key_type = type;
  out.verifier_id = "sshsig";
  out.config = core::Json{{"public_key", type + " " + encoded}};
  out.authenticator_id = "sshsig:" + type;
  out.principal_digest = core::sha256_hex(*blob);
  out.fingerprint = ssh_fingerprint(*blob);
  return out;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file.flush()) throw SystemError("cannot write " + path.string());
}

}  // namespace

UserDecisionKey UserDecisionKey::load(const fs::path& file) {
  const std::string bytes = read_small_file(file, "key file");
  UserDecisionKey key;
  key.file_ = file;
  if (bytes.find("-----BEGIN PRIVATE KEY-----") != std::string::npos ||
      bytes.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string::npos) {
    const Pkey pkey = read_private_pem(bytes, file);
    key.type_ = Type::kEd25519Pem;
    key.private_pem_ = bytes;
    key.public_text_ = public_pem_of(pkey.get());
    return key;
  }
  key.type_ = Type::kOpenSsh;
  if (bytes.find("-----BEGIN OPENSSH PRIVATE KEY-----") != std::string::npos) {
    std::string pub;
    const fs::path pub_file = fs::path(file.string() + ".pub");
    std::error_code ec;
    if (fs::is_regular_file(pub_file, ec)) {
      pub = read_small_file(pub_file, "public key file");
    } else if (run_program({"ssh-keygen", "-y", "-f", file.string()}, &pub) != 0) {
      throw InvalidArgument("ssh-keygen -y could not read the public half of " + file.string());
    }
    const auto text = ssh_public_text(pub);
    if (!text) throw InvalidArgument("the public half of " + file.string() + " is not an SSH key");
    key.public_text_ = *text;
    return key;
  }
  const auto text = ssh_public_text(bytes);
  if (!text) {
    throw InvalidArgument("key file " + file.string() +
                          " is neither an Ed25519 PEM private key nor an OpenSSH key");
  }
  key.public_text_ = *text;
  return key;
}

std::string_view UserDecisionKey::verifier_id() const noexcept {
  return type_ == Type::kEd25519Pem ? "ed25519" : "sshsig";
}

core::Json UserDecisionKey::verifier_config() const {
  if (type_ == Type::kEd25519Pem) return core::Json{{"public_key_pem", public_text_}};
  return core::Json{{"public_key", public_text_}};
}

std::string UserDecisionKey::default_principal_digest() const {
  return core::sha256_hex(type_ == Type::kEd25519Pem ? trim(public_text_) : public_text_);
}

bool UserDecisionKey::matches(std::string_view verifier_id_of_registration,
                              const core::Json& config) const {
  if (verifier_id_of_registration != verifier_id() || !config.is_object()) return false;
  if (type_ == Type::kEd25519Pem) {
    const auto pem = config.find("public_key_pem");
    if (pem == config.end() || !pem->is_string()) return false;
    const Pkey theirs = read_public_pem(pem->get_ref<const std::string&>());
    const Pkey mine = read_public_pem(public_text_);
    return theirs && mine && EVP_PKEY_eq(theirs.get(), mine.get()) == 1;
  }
  const auto line = config.find("public_key");
  if (line == config.end() || !line->is_string()) return false;
  const auto text = ssh_public_text(line->get_ref<const std::string&>());
  return text && *text == public_text_;
}

std::string UserDecisionKey::sign(std::string_view message) const {
  if (type_ == Type::kEd25519Pem) {
    const Pkey key = read_private_pem(private_pem_, file_);
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
    std::array<unsigned char, 64> signature{};
    std::size_t size = signature.size();
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
        EVP_DigestSign(ctx.get(), signature.data(), &size,
                       reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1) {
      ERR_clear_error();
      throw SystemError("openssl could not sign with " + file_.string());
    }
    return std::string(reinterpret_cast<const char*>(signature.data()), size);
  }
  const ScratchDir scratch;
  const fs::path msg = scratch.path() / "decision";
  write_file(msg, message);
  const int status = run_program({"ssh-keygen", "-q", "-Y", "sign", "-f", file_.string(), "-n",
                                  std::string(kSshSignatureNamespace), msg.string()},
                                 nullptr);
  if (status != 0) {
    throw FailedPrecondition("ssh-keygen -Y sign with " + file_.string() + " failed (exit " +
                             std::to_string(status) + ")");
  }
  return read_small_file(fs::path(msg.string() + ".sig"), "ssh signature");
}

std::string ssh_fingerprint(std::string_view blob) {
  const core::Sha256Digest digest = [&] {
    core::Sha256 hash;
    hash.update(blob);
    return hash.finish();
  }();
  std::string text =
      base64_encode(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
  while (!text.empty() && text.back() == '=') text.pop_back();
  return "SHA256:" + text;
}

TrustKey read_trust_key(const fs::path& file) {
  const std::string bytes = read_small_file(file, "key file");
  if (bytes.find("-----BEGIN PUBLIC KEY-----") != std::string::npos) {
    const Pkey key = read_public_pem(bytes);
    if (!key) throw InvalidArgument("key file " + file.string() + " is not a readable PEM key");
    return trust_key_of_pem(key.get(), file);
  }
  const bool private_key = bytes.find("PRIVATE KEY-----") != std::string::npos;
  if (!private_key) return trust_key_of_line(bytes, file);
  // A private key file approve also reads: trust its public half.
  const UserDecisionKey key = UserDecisionKey::load(file);
  if (key.type() == UserDecisionKey::Type::kEd25519Pem) {
    const Pkey pkey = read_public_pem(key.public_text());
    if (!pkey) throw SystemError("openssl could not read back the public key");
    return trust_key_of_pem(pkey.get(), file);
  }
  return trust_key_of_line(key.public_text(), file);
}

std::optional<std::string> config_fingerprint(std::string_view verifier_id,
                                              const core::Json& config) {
  if (!config.is_object()) return std::nullopt;
  if (verifier_id == "ed25519") {
    const auto pem = config.find("public_key_pem");
    if (pem == config.end() || !pem->is_string()) return std::nullopt;
    const Pkey key = read_public_pem(pem->get_ref<const std::string&>());
    if (!key || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) return std::nullopt;
    return ssh_fingerprint(ssh_string(kSshEd25519) + ssh_string(raw_ed25519(key.get())));
  }
  if (verifier_id == "sshsig") {
    const auto line = config.find("public_key");
    if (line == config.end() || !line->is_string()) return std::nullopt;
    const auto text = ssh_public_text(line->get_ref<const std::string&>());
    if (!text) return std::nullopt;
    const auto blob = base64_decode(text->substr(text->find(' ') + 1));
    if (!blob) return std::nullopt;
    return ssh_fingerprint(*blob);
  }
  return std::nullopt;
}

runtime::VerifierRegistration registration_for(
    const std::vector<runtime::VerifierRegistration>& registrations, std::string_view audience,
    const UserDecisionKey& key) {
  for (const runtime::VerifierRegistration& registration : registrations) {
    if (registration.key.audience == audience &&
        key.matches(registration.plugin_id, registration.config)) {
      return registration;
    }
  }
  throw NotFound("this key is not trusted for audience " + std::string(audience) +
                 ": run ctx consent trust --audience " + std::string(audience) + " ...");
}

runtime::SignedAssertion sign_decision(const UserDecisionKey& key,
                                       const runtime::VerifierRegistration& registration,
                                       std::string_view challenge_digest, engine::Decision decision,
                                       core::Timestamp now, core::Timestamp challenge_expires_at) {
  if (challenge_expires_at <= now) {
    throw FailedPrecondition("consent challenge " + std::string(challenge_digest) + " has expired");
  }
  std::array<std::uint8_t, 32> nonce{};
  core::random_bytes(nonce.data(), nonce.size());
  // Whole seconds: the canonical text then has no fraction.
  const core::Timestamp issued{now.micros - now.micros % 1'000'000};
  const core::Timestamp expires =
      std::min(challenge_expires_at, core::Timestamp{issued.micros + kAssertionLifetimeMicros});
  runtime::SignedAssertionClaims claims;
  claims.challenge_digest = std::string(challenge_digest);
  claims.decision = decision;
  claims.principal_digest = registration.key.principal_digest;
  claims.authenticator_id = registration.key.authenticator_id;
  claims.audience = registration.key.audience;
  claims.nonce = core::to_hex(nonce.data(), nonce.size());
  claims.issued_at = core::format_rfc3339(issued);
  claims.expires_at = core::format_rfc3339(expires);
  claims.proof = "unsigned";  // signing_bytes() exclude the proof
  const std::string signing_bytes = runtime::SignedAssertion::create(claims).signing_bytes();
  claims.proof = key.sign(signing_bytes);
  return runtime::SignedAssertion::create(std::move(claims));
}

}  // namespace ctx::cli
