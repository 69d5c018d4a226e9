// Must not compile: the class requires an ABI minor the SDK headers do not describe.
#include <ctx/sdk/plugin.hpp>
#include <string_view>
struct Bad : ctx::sdk::Verifier {
  static constexpr std::uint32_t kAbiMinorRequired = CTX_ABI_MINOR + 1;
  bool verify(std::string_view, std::string_view) override { return false; }
};
CTX_PLUGIN(Bad, verifier, "minor-too-new", "1.0.0");
