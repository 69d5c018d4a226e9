// Must not compile: the version is not a semantic version.
#include <ctx/sdk/plugin.hpp>
#include <string_view>
struct Bad : ctx::sdk::Verifier {
  bool verify(std::string_view, std::string_view) override { return false; }
};
CTX_PLUGIN(Bad, verifier, "bad-version", "1.0");
