// ctx::support: the one strict JSON reader (building and checking give the same verdicts, for
// json and ordered_json), the fd owner, directory fsync and the token/digest predicates.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctx/support/fs.hpp>
#include <ctx/support/strict_json.hpp>
#include <ctx/support/text.hpp>
#include <ctx/support/unique_fd.hpp>
#include <filesystem>
#include <string>

namespace ctx::support {
namespace {

std::optional<JsonFault> fault_of(const std::string& text, std::size_t depth = 8) {
  nlohmann::json built;
  nlohmann::ordered_json ordered;
  const auto building = read_strict_json(text, &built, depth);
  const auto keeping_order = read_strict_json(text, &ordered, depth);
  const auto checking = read_strict_json<nlohmann::json>(text, nullptr, depth);
  EXPECT_EQ(building.has_value(), checking.has_value()) << text;
  EXPECT_EQ(building.has_value(), keeping_order.has_value()) << text;
  if (building && checking) {
    EXPECT_EQ(building->fault, checking->fault) << text;
  }
  if (!building) {
    EXPECT_EQ(built, nlohmann::json::parse(text)) << text;
  }
  return building ? std::optional(building->fault) : std::nullopt;
}

TEST(SupportStrictJson, RefusesWhatNlohmannWouldQuietlyAccept) {
  EXPECT_EQ(fault_of(R"({"a":1,"a":2})"), JsonFault::kDuplicateKey);
  EXPECT_EQ(fault_of(R"({"x":[{"k":1,"k":1}]})"), JsonFault::kDuplicateKey);
  EXPECT_EQ(fault_of("{} {}"), JsonFault::kMalformed);
  EXPECT_EQ(fault_of("{\"a\":1} // note"), JsonFault::kMalformed);
  EXPECT_EQ(fault_of(std::string("{\"a\":1}\0", 8)), JsonFault::kMalformed);
  EXPECT_EQ(fault_of("{\"a\":\"\xff\"}"), JsonFault::kMalformed);
  EXPECT_EQ(fault_of(std::string(9, '[') + std::string(9, ']')), JsonFault::kTooDeep);
}

TEST(SupportStrictJson, AcceptsAndBuildsWhatIsStrictlyValid) {
  EXPECT_EQ(fault_of(R"({"x":[{"a":1},{"a":1}],"a":{"a":{}},"n":null,"f":1.5,"u":7,"i":-7})"),
            std::nullopt);
  EXPECT_EQ(fault_of(std::string(8, '[') + std::string(8, ']')), std::nullopt);
  EXPECT_EQ(fault_of(" \"text\" "), std::nullopt);
  nlohmann::ordered_json ordered;
  ASSERT_FALSE(read_strict_json(R"({"z":1,"a":2})", &ordered, 8));
  EXPECT_EQ(ordered.dump(), R"({"z":1,"a":2})");  // the user's key order is kept
}

TEST(SupportStrictJson, AMalformedTextNamesTheByteAndLeavesTheOutputAlone) {
  nlohmann::json out = "unchanged";
  const auto failure = read_strict_json(std::string_view("{\"a\": tru}"), &out, 8);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->fault, JsonFault::kMalformed);
  EXPECT_GT(failure->byte, 6u);
  EXPECT_EQ(out, "unchanged");
  const auto nul = read_strict_json(std::string_view("{}\0", 3), &out, 8);
  ASSERT_TRUE(nul);
  EXPECT_EQ(nul->byte, 3u);
}

TEST(SupportText, TokensAndDigests) {
  EXPECT_TRUE(is_sha256_hex(std::string(64, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(64, 'A')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
  EXPECT_TRUE(is_token("ed25519"));
  EXPECT_TRUE(is_token("user@host:key-1.v_2"));
  EXPECT_TRUE(is_token(std::string(128, 'x')));
  EXPECT_FALSE(is_token(std::string(129, 'x')));
  EXPECT_FALSE(is_token(""));
  EXPECT_FALSE(is_token("-leading"));
  EXPECT_FALSE(is_token("a b"));
  EXPECT_FALSE(is_token("a/b"));
}

TEST(SupportFs, TheFdOwnerClosesOnceAndDirectoriesSync) {
  char pattern[] = "/tmp/ctx-support-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::filesystem::path dir(pattern);
  int raw = -1;
  {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    raw = fd.get();
    UniqueFd moved(std::move(fd));
    EXPECT_FALSE(fd.valid());
    EXPECT_EQ(moved.get(), raw);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);  // closed when its owner went away
  EXPECT_EQ(fsync_directory(dir), 0);
  EXPECT_EQ(fsync_directory(dir / "absent"), ENOENT);
  std::filesystem::create_directory_symlink(dir, dir / "link");
  EXPECT_EQ(fsync_directory(dir / "link"), 0);
  EXPECT_NE(fsync_directory(dir / "link", Follow::kNoSymlinks), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ctx::support
