// Must not compile: the class is a verifier, the macro says installer.
#include <ctx/sdk/plugin.hpp>
#include <string_view>
struct Bad : ctx::sdk::Verifier {
  bool verify(std::string_view, std::string_view) override { return false; }
};
CTX_PLUGIN(Bad, installer, "wrong-kind", "1.0.0");
