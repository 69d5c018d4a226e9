// Must not compile: the id breaks [a-z0-9][a-z0-9._-]{0,63}.
#include <ctx/sdk/plugin.hpp>
#include <string_view>
struct Bad : ctx::sdk::Verifier {
  bool verify(std::string_view, std::string_view) override { return false; }
};
CTX_PLUGIN(Bad, verifier, "Bad-Id", "1.0.0");
