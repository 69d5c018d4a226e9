// Must compile with the same command line: proves the failures above are the macro's checks.
#include <ctx/sdk/plugin.hpp>
#include <string_view>
struct Good : ctx::sdk::Verifier {
  bool verify(std::string_view, std::string_view) override { return false; }
};
CTX_PLUGIN(Good, verifier, "good", "1.0.0");
