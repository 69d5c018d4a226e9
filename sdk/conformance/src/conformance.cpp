#include "ctx/conformance/conformance.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <ctx/sdk/error.hpp>
#include <ctx/support/canonical_json.hpp>
#include <ctx/support/digest.hpp>
#include <ctx/support/text.hpp>
#include <iostream>
#include <string>
#include <system_error>

#include "sdk/conformance/src/plugin_under_test.hpp"

namespace ctx::conformance {

namespace fs = std::filesystem;

struct Session::State {
  fs::path base;
  ~State() {
    std::error_code ignored;
    fs::remove_all(base, ignored);
  }
};

Session::Session(std::shared_ptr<State> state) : state_(std::move(state)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Options parse_arguments(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--config") {
      if (i + 1 == argc) throw InvalidArgument("--config needs a file");
      options.config_file = fs::absolute(argv[++i]);
    } else if (arg == "--timeout") {
      if (i + 1 == argc) throw InvalidArgument("--timeout needs a number of seconds");
      const std::string text = argv[++i];
      double seconds = 0;
      std::size_t used = 0;
      try {
        seconds = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || !(seconds > 0) || seconds > 86400) {
        throw InvalidArgument("--timeout wants seconds between 0 and 86400, not \"" + text + "\"");
      }
      options.call_timeout = std::chrono::milliseconds(
          std::max<std::int64_t>(1, static_cast<std::int64_t>(seconds * 1000)));
    } else if (!arg.empty() && arg.front() == '-') {
      throw InvalidArgument("unknown option " + arg);
    } else if (options.plugin.empty()) {
      options.plugin = fs::absolute(arg);
    } else {
      throw InvalidArgument("only one plugin may be named");
    }
  }
  if (options.plugin.empty()) throw InvalidArgument("name the plugin shared object to test");
  return options;
}

Session register_suites(const Options& options) {
  std::string pattern = (fs::temp_directory_path() / "ctx-conformance-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw SystemError("conformance kit could not create a temporary directory");
  }
  auto state = std::make_shared<Session::State>();
  state->base = pattern;

  auto plugin = std::make_shared<detail::PluginUnderTest>(options.plugin, options.config_file,
                                                          state->base, options.call_timeout);
  const detail::Probe probe = plugin->probe();
  if (!probe.loaded) {
    const std::string reason = probe.failure;
    detail::add_kit_test("Load", "PluginLoadsThroughThePinnedLoader", [reason] {
      FAIL() << "the plugin cannot be loaded as the host loads it: " << reason;
    });
    return Session(std::move(state));
  }
  if (probe.needs_config) {
    const std::string reason = *probe.needs_config;
    detail::add_kit_test("KitConfig", "PluginNeedsAConfiguration", [reason] {
      FAIL() << "this plugin needs a configuration: pass --config FILE with a \"plugin_config\" "
                "(its create refused an empty configuration: "
             << reason << ")";
    });
    return Session(std::move(state));
  }
  detail::register_abi_suite(plugin);
  switch (plugin->kind()) {
    case plugins::PluginKind::kVerifier:
      detail::register_verifier_suite(plugin);
      break;
    case plugins::PluginKind::kInstaller:
      detail::register_installer_suite(plugin);
      break;
    case plugins::PluginKind::kHostAdapter:
      detail::register_host_adapter_suite(plugin);
      break;
  }
  return Session(std::move(state));
}

int run_main(int argc, char** argv) {
  // No OpenSSL module the kit's user did not ask for.
  if (!support::init_openssl_without_config()) {
    std::cerr << "ctx-conformance: openssl init failed\n";
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  Options options;
  try {
    options = parse_arguments(argc, argv);
  } catch (const Error& e) {
    std::cerr << "ctx-conformance: " << e.what() << "\n"
              << "usage: ctx-conformance PLUGIN.so [--config FILE] [--timeout SECONDS] "
                 "[gtest flags]\n";
    return 2;
  }
  const Session session = register_suites(options);
  return RUN_ALL_TESTS() == 0 ? 0 : 1;
}

}  // namespace ctx::conformance
