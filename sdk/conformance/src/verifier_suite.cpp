// The verifier suite: nothing but the exact configured proof is ever accepted. With a signing
// fixture in the kit config (verifier.vector plus other_plugin_config) it checks acceptance of the
// fixture and rejection of a wrong key, of truncated proofs and of altered signing bytes.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <ctx/sdk/error.hpp>

#include "sdk/conformance/src/plugin_under_test.hpp"

namespace ctx::conformance::detail {
namespace {

constexpr char kSigningBytes[] = "ctx-conformance signing bytes";

struct Vector {
  Json assertion;
  std::string signing_bytes;
};

std::optional<Vector> test_vector(const PluginUnderTest& plugin) {
  const Json& config = plugin.kit_config();
  const auto verifier = config.find("verifier");
  if (verifier == config.end() || !verifier->contains("vector")) return std::nullopt;
  const Json& vector = verifier->at("vector");
  if (!vector.is_object() || !vector.contains("assertion") || !vector["assertion"].is_object() ||
      !vector.contains("signing_bytes") || !vector["signing_bytes"].is_string()) {
    throw InvalidArgument(
        "kit config verifier.vector needs an object \"assertion\" and a string \"signing_bytes\"");
  }
  return Vector{vector.at("assertion"), vector.at("signing_bytes").get<std::string>()};
}

// Runs verify, recording an escaped exception (a crash or exit ends the supervised child).
Contained verify(const PluginUnderTest& plugin, void* instance, const std::string& assertion,
                 const std::string& signing_bytes) {
  const auto fn = plugin.loaded().verifier_ops()->verify;
  return contain([&] {
    std::uint32_t verdict = kVerdictUnset;
    CallResult r = invoke("verify", [&](ctx_error* err) {
      return fn(
          instance, ctx_bytes{reinterpret_cast<const uint8_t*>(assertion.data()), assertion.size()},
          ctx_bytes{reinterpret_cast<const uint8_t*>(signing_bytes.data()), signing_bytes.size()},
          &verdict, err);
    });
    r.verdict = verdict;
    return r;
  });
}

void expect_rejected(const PluginUnderTest& plugin, const Contained& call,
                     const std::string& what) {
  expect_contained_code(plugin, call, what);
  EXPECT_NE(call.result.verdict, CTX_VERDICT_ACCEPTED) << what << " was accepted";
}

// Every string under "proof", each changed in one character, one at a time.
void mutate_proof_strings(const Json& node, const Json::json_pointer& at,
                          std::vector<Json::json_pointer>& out) {
  if (node.is_string()) {
    out.push_back(at);
  } else if (node.is_object()) {
    for (const auto& [key, value] : node.items()) mutate_proof_strings(value, at / key, out);
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) mutate_proof_strings(node[i], at / i, out);
  }
}

// Standard padded base64 (EVP_EncodeBlock / EVP_DecodeBlock); nullopt when `text` is not.
std::string to_base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> from_base64(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  std::size_t size = static_cast<std::size_t>(n);
  for (std::size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;  // padding
  out.resize(size);
  return out;
}

// Lengths to cut a proof to: one byte short, half, one byte, nothing. Trailing whitespace of a
// textual proof (an armored signature's final newline) does not count as proof.
std::vector<std::size_t> truncations(const std::string& proof) {
  std::size_t length = proof.size();
  const bool text = std::all_of(proof.begin(), proof.end(), [](char c) {
    return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\r' || c == '\t';
  });
  while (text && length > 0 && std::isspace(static_cast<unsigned char>(proof[length - 1]))) {
    --length;
  }
  std::vector<std::size_t> out;
  for (const std::size_t cut : {length - 1, length / 2, std::size_t{1}, std::size_t{0}}) {
    if (length > 0 && cut < length && std::find(out.begin(), out.end(), cut) == out.end()) {
      out.push_back(cut);
    }
  }
  return out;
}

std::string flipped(std::string text) {
  if (text.empty()) return "0";
  char& last = text.back();
  last = last == '0' ? '1' : '0';
  return text;
}

}  // namespace

void register_verifier_suite(const std::shared_ptr<PluginUnderTest>& plugin) {
  bool has_vector = false;
  try {
    has_vector = test_vector(*plugin).has_value();
  } catch (const std::exception& e) {
    const std::string reason = e.what();
    add_kit_test("KitConfig", "IsUsable", [reason] { FAIL() << reason; });
    return;
  }
  add_plugin_test(plugin, "Verifier", "RejectsEmptyAndMalformedAssertions", [plugin] {
    RawInstance instance(*plugin, plugin->fresh_config());
    ASSERT_EQ(instance.created().code, CTX_OK) << "create failed: " << instance.created().message;
    const std::string id = plugin->descriptor().id;
    const std::vector<std::string> assertions = {
        "",
        "{}",
        R"({"proof":{}})",
        R"({"proof":""})",
        R"({"proof":null})",
        R"({"proof":{"scheme":")" + id + R"("}})",
        R"({"proof":{"scheme":")" + id + R"(","mac_hex":"","signature":""}})"};
    for (const std::string& assertion : assertions) {
      for (const std::string& signing : {std::string(kSigningBytes), std::string()}) {
        expect_rejected(*plugin, verify(*plugin, instance.handle(), assertion, signing),
                        "verify of assertion '" + assertion + "' over " +
                            std::to_string(signing.size()) + " signing bytes");
      }
    }
  });

  add_plugin_test(plugin, "Verifier", "RejectsWrongProofs", [plugin] {
    RawInstance instance(*plugin, plugin->fresh_config());
    ASSERT_EQ(instance.created().code, CTX_OK) << "create failed: " << instance.created().message;
    const auto vector = test_vector(*plugin);
    if (!vector) {
      // Without a vector the kit can only offer proofs no key produced.
      const std::string id = plugin->descriptor().id;
      const Json forged = {{"proof",
                            {{"scheme", id},
                             {"mac_hex", std::string(64, '0')},
                             {"signature", std::string(128, '0')}}}};
      expect_rejected(*plugin, verify(*plugin, instance.handle(), forged.dump(), kSigningBytes),
                      "verify of a forged proof");
      return;
    }
    expect_rejected(
        *plugin,
        verify(*plugin, instance.handle(), vector->assertion.dump(), vector->signing_bytes + "!"),
        "verify of the test vector over other signing bytes");
    expect_rejected(*plugin, verify(*plugin, instance.handle(), vector->assertion.dump(), ""),
                    "verify of the test vector over empty signing bytes");
    // A signed-assertion wire payload (runtime spec §5.6) carries its proof as "proof_base64".
    const std::string proof_key = vector->assertion.contains("proof_base64") ? "proof_base64"
                                                                             : "proof";
    ASSERT_TRUE(vector->assertion.contains(proof_key)) << "the test vector has no \"proof\"";
    std::vector<Json::json_pointer> strings;
    mutate_proof_strings(vector->assertion.at(proof_key), Json::json_pointer("/" + proof_key),
                         strings);
    ASSERT_FALSE(strings.empty()) << "the test vector's proof has no strings to mutate";
    for (const auto& at : strings) {
      const std::string original = vector->assertion[at].get<std::string>();
      std::vector<std::pair<std::string, std::string>> wrongs = {{"changed", flipped(original)}};
      if (!original.empty()) {
        std::string first = original;  // an early character too: the last may be only padding
        first.front() = first.front() == 'A' ? 'B' : 'A';
        wrongs.emplace_back("changed at its start", first);
      }
      if (original.size() > 4) {
        wrongs.emplace_back("truncated", original.substr(0, (original.size() - 1) / 4 * 4));
      }
      for (const auto& [how, text] : wrongs) {
        Json wrong = vector->assertion;
        wrong[at] = text;
        expect_rejected(*plugin,
                        verify(*plugin, instance.handle(), wrong.dump(), vector->signing_bytes),
                        "verify with " + at.to_string() + " " + how);
      }
    }
  });

  if (has_vector) {
    add_plugin_test(plugin, "Verifier", "AcceptsTheConfiguredTestVector", [plugin] {
      RawInstance instance(*plugin, plugin->fresh_config());
      ASSERT_EQ(instance.created().code, CTX_OK) << "create failed: " << instance.created().message;
      const auto vector = test_vector(*plugin);
      for (int round = 0; round < 3; ++round) {
        const Contained call =
            verify(*plugin, instance.handle(), vector->assertion.dump(), vector->signing_bytes);
        ASSERT_EQ(call.ending, Contained::Ending::kReturned) << call.describe();
        EXPECT_EQ(call.result.code, CTX_OK) << call.result.message;
        EXPECT_EQ(call.result.verdict, CTX_VERDICT_ACCEPTED)
            << "the configured test vector was not accepted";
        EXPECT_TRUE(call.result.error_untouched);
      }
    });
    const Json& verifier = plugin->kit_config().at("verifier");
    if (!verifier.contains("other_plugin_config") || !verifier["other_plugin_config"].is_object()) {
      add_kit_test("KitConfig", "VerifierFixtureNamesAnotherKey", [] {
        FAIL() << "kit config verifier.vector needs verifier.other_plugin_config (an object: the "
                  "plugin config of another key) so the kit can check that a wrong key is "
                  "rejected";
      });
    } else {
      add_plugin_test(plugin, "Verifier", "RejectsAWrongKey", [plugin] {
        const std::string other = plugin->kit_config()["verifier"]["other_plugin_config"].dump();
        RawInstance instance(*plugin, other);
        ASSERT_EQ(instance.created().code, CTX_OK)
            << "create with other_plugin_config failed: " << instance.created().message;
        const auto vector = test_vector(*plugin);
        for (int round = 0; round < 2; ++round) {
          expect_rejected(
              *plugin,
              verify(*plugin, instance.handle(), vector->assertion.dump(), vector->signing_bytes),
              "verify of the signing fixture under another key");
        }
      });
    }

    add_plugin_test(plugin, "Verifier", "RejectsATruncatedProof", [plugin] {
      RawInstance instance(*plugin, plugin->fresh_config());
      ASSERT_EQ(instance.created().code, CTX_OK) << "create failed: " << instance.created().message;
      const auto vector = test_vector(*plugin);
      int checked = 0;
      if (vector->assertion.contains("proof_base64")) {
        // The wire payload's proof: cut the decoded proof bytes, re-encode them canonically.
        ASSERT_TRUE(vector->assertion["proof_base64"].is_string());
        const auto proof = from_base64(vector->assertion["proof_base64"].get<std::string>());
        ASSERT_TRUE(proof.has_value()) << "the signing fixture's proof_base64 is not base64";
        for (const std::size_t cut : truncations(*proof)) {
          Json wrong = vector->assertion;
          wrong["proof_base64"] = to_base64(proof->substr(0, cut));
          expect_rejected(*plugin,
                          verify(*plugin, instance.handle(), wrong.dump(), vector->signing_bytes),
                          "verify with the proof cut to " + std::to_string(cut) + " of " +
                              std::to_string(proof->size()) + " bytes");
          ++checked;
        }
      } else {
        ASSERT_TRUE(vector->assertion.contains("proof")) << "the signing fixture has no proof";
        std::vector<Json::json_pointer> strings;
        mutate_proof_strings(vector->assertion.at("proof"), Json::json_pointer("/proof"), strings);
        for (const auto& at : strings) {
          const std::string original = vector->assertion[at].get<std::string>();
          for (const std::size_t cut : truncations(original)) {
            Json wrong = vector->assertion;
            wrong[at] = original.substr(0, cut);
            expect_rejected(
                *plugin, verify(*plugin, instance.handle(), wrong.dump(), vector->signing_bytes),
                "verify with " + at.to_string() + " cut to " + std::to_string(cut) + " characters");
            ++checked;
          }
        }
      }
      EXPECT_GT(checked, 0) << "the signing fixture's proof is empty: nothing to truncate";
    });

    add_plugin_test(plugin, "Verifier", "RejectsAlteredSigningBytes", [plugin] {
      RawInstance instance(*plugin, plugin->fresh_config());
      ASSERT_EQ(instance.created().code, CTX_OK) << "create failed: " << instance.created().message;
      const auto vector = test_vector(*plugin);
      const std::string& bytes = vector->signing_bytes;
      ASSERT_FALSE(bytes.empty()) << "the signing fixture has empty signing bytes";
      std::vector<std::pair<std::string, std::string>> altered;
      for (const std::size_t at : {std::size_t{0}, bytes.size() / 2, bytes.size() - 1}) {
        for (const unsigned char bit : {0x01, 0x80}) {
          std::string changed = bytes;
          changed[at] = static_cast<char>(static_cast<unsigned char>(changed[at]) ^ bit);
          altered.emplace_back("byte " + std::to_string(at) + " xor " + std::to_string(bit),
                               changed);
        }
      }
      altered.emplace_back("one byte appended", bytes + " ");
      altered.emplace_back("the last byte dropped", bytes.substr(0, bytes.size() - 1));
      altered.emplace_back("the first byte dropped", bytes.substr(1));
      altered.emplace_back("no bytes", "");
      for (const auto& [how, changed] : altered) {
        expect_rejected(*plugin,
                        verify(*plugin, instance.handle(), vector->assertion.dump(), changed),
                        "verify of the signing fixture over its signing bytes with " + how);
      }
    });
  }
}

}  // namespace ctx::conformance::detail
