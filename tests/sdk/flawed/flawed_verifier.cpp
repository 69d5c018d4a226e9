// A deliberately flawed HMAC-SHA256 verifier (tests only): proof_base64 = HMAC(key, signing
// bytes), with one flaw chosen by its config, so the kit's verifier suite must fail it in the
// matching test. config {"key": "<text>", "flaw": "any-key" | "prefix" | "fixed-bytes"}:
//   any-key      accepts a MAC under its key or under the built-in key "flawed-default-key"
//                (so the fixture verifies under another key's instance too)
//   prefix       accepts any prefix of the right MAC (a truncated proof)
//   fixed-bytes  MACs the signing bytes of the kit's fixture, never the ones passed in
#include <ctx/sdk/plugin.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace {

using Json = nlohmann::json;

std::string hmac(const std::string& key, std::string_view bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out, &size);
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string decode(const std::string& text) {
  if (text.size() % 4 != 0) throw ctx::InvalidArgument("proof is not base64");
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) throw ctx::InvalidArgument("proof is not base64");
  std::size_t size = static_cast<std::size_t>(n);
  for (std::size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;
  out.resize(size);
  return out;
}

class FlawedVerifier final : public ctx::sdk::Verifier {
 public:
  explicit FlawedVerifier(std::string_view config) {
    const Json c = Json::parse(config, nullptr, false);
    if (!c.is_object() || !c.contains("key") || !c["key"].is_string() || !c.contains("flaw") ||
        !c["flaw"].is_string()) {
      throw ctx::InvalidArgument("flawed-verifier config needs strings key and flaw");
    }
    key_ = c["key"].get<std::string>();
    flaw_ = c["flaw"].get<std::string>();
  }
  bool verify(std::string_view assertion_json, std::string_view signing_bytes) override {
    const Json a = Json::parse(assertion_json, nullptr, false);
    if (!a.is_object() || !a.contains("proof_base64") || !a["proof_base64"].is_string()) {
      return false;
    }
    const std::string proof = decode(a["proof_base64"].get<std::string>());
    if (flaw_ == "any-key") {
      return proof == hmac(key_, signing_bytes) ||
             proof == hmac("flawed-default-key", signing_bytes);
    }
    if (flaw_ == "prefix") {
      const std::string right = hmac(key_, signing_bytes);
      return !proof.empty() ? right.compare(0, proof.size(), proof) == 0 : right.empty();
    }
    if (flaw_ == "fixed-bytes") return proof == hmac(key_, "flawed fixture signing bytes");
    return false;
  }

 private:
  std::string key_;
  std::string flaw_;
};

}  // namespace

CTX_PLUGIN(FlawedVerifier, verifier, "flawed-verifier", "1.0.0");
