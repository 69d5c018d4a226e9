#include <ctx/abi/plugin_abi.h>

#include <ctx/loader/plugin_identity.hpp>
#include <regex>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"
#include "host/core/error.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

PluginIdentity sample() {
  return PluginIdentity{PluginKind::kVerifier, "hmac-sha256", "1.2.3", 1, 0, std::string(64, 'a')};
}

TEST(PluginKind, NamesRoundTrip) {
  for (const PluginKind kind :
       {PluginKind::kInstaller, PluginKind::kVerifier, PluginKind::kHostAdapter}) {
    EXPECT_EQ(parse_kind(kind_name(kind)), kind);
  }
  EXPECT_EQ(kind_name(PluginKind::kHostAdapter), "host-adapter");
  CTX_EXPECT_THROW(parse_kind("driver"), InvalidArgument, "unknown plugin kind");
  EXPECT_TRUE(is_known_kind(CTX_KIND_HOST_ADAPTER));
  EXPECT_FALSE(is_known_kind(0));
  EXPECT_FALSE(is_known_kind(4));
}

TEST(PluginId, FollowsTheTokenGrammar) {
  EXPECT_TRUE(is_valid_plugin_id("a"));
  EXPECT_TRUE(is_valid_plugin_id("0skill-installer.v2_x"));
  EXPECT_TRUE(is_valid_plugin_id(std::string(64, 'z')));
  EXPECT_FALSE(is_valid_plugin_id(std::string(65, 'z')));
  EXPECT_FALSE(is_valid_plugin_id(""));
  EXPECT_FALSE(is_valid_plugin_id("-leading"));
  EXPECT_FALSE(is_valid_plugin_id(".hidden"));
  EXPECT_FALSE(is_valid_plugin_id("Upper"));
  EXPECT_FALSE(is_valid_plugin_id("with space"));
  EXPECT_FALSE(is_valid_plugin_id("slash/no"));
}

TEST(PluginVersion, IsSemver) {
  EXPECT_TRUE(is_valid_semver("0.0.0"));
  EXPECT_TRUE(is_valid_semver("1.20.3"));
  EXPECT_TRUE(is_valid_semver("1.0.0-rc.1+build.5"));
  EXPECT_FALSE(is_valid_semver("1.0"));
  EXPECT_FALSE(is_valid_semver("01.0.0"));
  EXPECT_FALSE(is_valid_semver("1.0.0-"));
  EXPECT_FALSE(is_valid_semver("v1.0.0"));
  EXPECT_FALSE(is_valid_semver(""));
}

// The hand-written grammar accepts exactly what semver.org's recommended expression accepts, over
// every string of up to 5 characters from an alphabet of the grammar's interesting characters,
// plus longer hand-picked ones.
TEST(PluginVersion, AcceptsExactlyWhatSemverOrgsExpressionAccepts) {
  const std::regex reference(
      R"(^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*))"
      R"((?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))"
      R"((?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?)"
      R"((?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$)");
  const std::string alphabet = "01.-+a";
  std::vector<std::string> inputs = {"1.2.3",          "10.20.30",         "1.0.0-alpha.1",
                                     "1.0.0-0.3.7",    "1.0.0-x.7.z.92",   "1.0.0+20130313",
                                     "1.0.0-rc.01",    "1.0.0-rc.1+b.001", "1.0.0-a..b",
                                     "1.0.0+",         "1.0.0-a+b+c",      "1.2.3.4",
                                     "1.2.3-0a",       "1.2.3-00",         "1.2.3-a-",
                                     "99999.0.0-X_Y"};
  std::vector<std::string> level = {""};
  for (int length = 1; length <= 5; ++length) {
    std::vector<std::string> next;
    for (const auto& prefix : level) {
      for (const char c : alphabet) next.push_back(prefix + c);
    }
    inputs.insert(inputs.end(), next.begin(), next.end());
    level = std::move(next);
  }
  for (const auto& prefix : level) inputs.push_back(prefix + ".0");  // 7-character ones
  int accepted = 0;
  for (const auto& input : inputs) {
    const bool expected = std::regex_match(input, reference);
    EXPECT_EQ(is_valid_semver(input), expected) << input;
    accepted += expected ? 1 : 0;
  }
  EXPECT_GT(accepted, 10);
}

TEST(PluginPlatform, NamesOsAndMachine) {
#if defined(__linux__) && defined(__x86_64__)
  EXPECT_EQ(current_platform(), "linux-x86_64");
#else
  EXPECT_NE(current_platform().find('-'), std::string::npos);
#endif
}

TEST(PluginIdentity, JsonHasTheDocumentedShape) {
  EXPECT_EQ(core::canonical_json(sample().to_json()),
            R"({"abi":{"major":1,"minor":0},"id":"hmac-sha256","kind":"verifier","sha256":")" +
                std::string(64, 'a') + R"(","version":"1.2.3"})");
  EXPECT_EQ(sample().label(), "verifier:hmac-sha256");
}

TEST(PluginIdentity, DigestIsCanonicalDigestAndCoversEveryField) {
  const PluginIdentity base = sample();
  EXPECT_EQ(base.digest(), core::canonical_digest(base.to_json()));
  EXPECT_EQ(base.digest(), sample().digest());

  std::vector<PluginIdentity> variants(6, base);
  variants[0].kind = PluginKind::kInstaller;
  variants[1].id = "hmac-sha512";
  variants[2].version = "1.2.4";
  variants[3].abi_major = 2;
  variants[4].abi_minor = 1;
  variants[5].sha256 = std::string(64, 'b');
  for (const PluginIdentity& variant : variants) {
    EXPECT_NE(variant.digest(), base.digest()) << core::canonical_json(variant.to_json());
  }
}

}  // namespace
}  // namespace ctx::plugins
