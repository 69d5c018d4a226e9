// The plugin under test as the suites see it: how it was pinned and loaded, its kit config, and
// helpers that call its C ABI directly (the suites check codes, error buffers and sinks, so they
// go beneath ctx::plugins' adapters). Implementation detail of ctx::conformance; not thread-safe.
//
// The kit process itself never maps the plugin: probe() pins it into a temporary lock and loads it
// in a supervised child (supervisor.hpp) to learn its kind, and every test registered with
// add_plugin_test runs in its own supervised child that loads the plugin from that lock. Every
// plugin call goes through invoke() (or a CallScope), so each has the per-call deadline.
#ifndef CTX_SDK_CONFORMANCE_SRC_PLUGIN_UNDER_TEST_HPP_
#define CTX_SDK_CONFORMANCE_SRC_PLUGIN_UNDER_TEST_HPP_

#include <ctx/abi/plugin_abi.h>

#include <chrono>
#include <cstdint>
#include <ctx/loader/lock_file.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <ctx/support/canonical_json.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sdk/conformance/src/supervisor.hpp"

namespace ctx::conformance::detail {

using Json = nlohmann::json;

// Written into *verdict before a verify call, so the suites see whether the plugin wrote it.
inline constexpr std::uint32_t kVerdictUnset = 0xdeadbeefu;
// Embedded in garbage inputs; no error message may repeat it.
inline constexpr char kInputMarker[] = "ctx-conformance-marker-4711";

// What one raw ABI call did.
struct CallResult {
  ctx_code code = CTX_OK;
  std::string message;             // up to the first NUL of ctx_error.message
  bool message_terminated = true;  // a NUL exists within the buffer
  bool error_untouched = true;     // the buffer still holds the kit's fill pattern
  std::string output;              // what the plugin wrote into the sink
  std::uint32_t verdict = kVerdictUnset;
};

// How a contained call ended: it returned, or a C++ exception crossed the C ABI. (A call that
// crashes, exits, hangs or prints ends the whole supervised child; the supervisor reports that.)
struct Contained {
  enum class Ending { kReturned, kThrew } ending = Ending::kReturned;
  CallResult result;
  std::string describe() const;
};

// A sink for raw calls: collects everything, or refuses every write with `refusal`.
class Sink {
 public:
  explicit Sink(ctx_code refusal = CTX_OK);
  ctx_sink* get() { return &sink_; }
  const std::string& text() const { return text_; }

 private:
  static ctx_code write(void* context, const uint8_t* data, size_t size) noexcept;
  std::string text_;
  ctx_code refusal_;
  ctx_sink sink_;
};

// Runs the plugin call `call` (named `name` in problem reports, e.g. "verify") inside a CallScope
// with a fresh error buffer (filled with a non-NUL pattern) and records the outcome.
CallResult invoke(const std::string& name, const std::function<ctx_code(ctx_error*)>& call);

// Runs `call` (which makes its plugin calls through invoke) and reports whether a C++ exception
// escaped it.
Contained contain(const std::function<CallResult()>& call);

// What probe() learned in its supervised child.
struct Probe {
  bool loaded = false;
  std::string failure;  // why not, when !loaded (every problem, one per line)
  plugins::PluginKind kind = plugins::PluginKind::kVerifier;
  bool has_install_locations = false;  // host adapters: the optional op is offered
  bool has_install_from_source = false;  // installers: the optional (minor 1) op is offered
  // Set when the kit has no plugin_config and create refused the empty configuration.
  std::optional<std::string> needs_config;
};

class PluginUnderTest {
 public:
  // Creates the temporary tree under `base` and reads the kit config (errors recorded, not
  // thrown); probe() and load() do the rest. Each plugin call must end within `call_deadline`.
  PluginUnderTest(std::filesystem::path plugin, std::optional<std::filesystem::path> config_file,
                  std::filesystem::path base, std::chrono::milliseconds call_deadline);

  // In a supervised child: pins the plugin into the temporary lock (inspect_for_pin +
  // LockFile::update, as `ctx plugin pin` does),
  // loads it from that lock and reports its kind; then, when the kit config has no
  // plugin_config, in a second child, creates and destroys an instance with an empty
  // configuration. Sets kind(), has_install_locations() and has_install_from_source() from the
  // answer.
  Probe probe();

  // Inside a test's supervised child: loads the plugin from the lock probe() wrote, inside the
  // sandbox as working directory. Returns false and records why on failure.
  bool load();

  // Registered-test bodies run through this: a supervised child loads the plugin and runs
  // `body`; its failures and problems are reported into the current test.
  void run_supervised(const std::function<void()>& body);

  const std::string& failure() const { return failure_; }
  // The loaded plugin, inside a supervised test. Errors: ctx::Error in the kit process itself.
  const plugins::LoadedPlugin& loaded() const;
  const plugins::LockEntry& entry() const { return entry_; }
  const std::filesystem::path& plugin_path() const { return plugin_; }
  const ctx_plugin_descriptor& descriptor() const { return loaded().descriptor(); }
  plugins::PluginKind kind() const { return kind_; }
  bool has_install_locations() const { return has_install_locations_; }
  bool has_install_from_source() const { return has_install_from_source_; }
  std::chrono::milliseconds call_deadline() const { return call_deadline_; }
  // How long a supervised child may spend between two plugin calls.
  std::chrono::milliseconds kit_deadline() const;

  // The plugin's ctx_plugin_entry, resolved again from the already-loaded cache file.
  ctx_plugin_entry_fn entry_function() const { return entry_function_; }

  // Files under the sandbox (relative paths), before loading and now.
  const std::set<std::string>& sandbox_before_load() const { return sandbox_before_; }
  std::set<std::string> sandbox_now() const;
  // Runs `body` with the sandbox as working directory, HOME (sandbox/home) and TMPDIR
  // (sandbox/tmp); restores all three afterwards.
  void in_sandbox(const std::function<void()>& body) const;

  // The config text for a new instance: plugin_config with "@TEMP_DIR@" replaced by a fresh
  // empty directory (unique across tests). Strings of it (>= 16 bytes) are remembered as secrets.
  // Empty when the kit config has no plugin_config.
  std::string fresh_config();
  // The directory the last fresh_config() substituted for "@TEMP_DIR@" (empty before).
  const std::filesystem::path& last_instance_dir() const { return last_instance_dir_; }
  // A new empty directory under the kit's temporary tree (e.g. for a body source).
  std::filesystem::path fresh_directory();
  // The first secret `message` contains (config strings, the input marker), or empty.
  std::string leaked_secret(const std::string& message) const;

  const Json& kit_config() const { return kit_config_; }
  bool has_plugin_config() const { return kit_config_.contains("plugin_config"); }
  const ctx_host_api* host_api() const { return &host_api_; }

 private:
  std::filesystem::path plugin_;
  std::optional<std::filesystem::path> config_file_;
  std::filesystem::path base_;
  std::chrono::milliseconds call_deadline_;
  std::string failure_;
  Json kit_config_ = Json::object();
  plugins::LockEntry entry_;
  std::shared_ptr<const plugins::LoadedPlugin> loaded_;
  ctx_plugin_entry_fn entry_function_ = nullptr;
  std::set<std::string> sandbox_before_;
  std::filesystem::path last_instance_dir_;
  std::vector<std::string> secrets_;
  plugins::PluginKind kind_ = plugins::PluginKind::kVerifier;
  bool has_install_locations_ = false;
  bool has_install_from_source_ = false;
  ctx_host_api host_api_{};
};

// One live instance created through the raw descriptor; destroy() is checked by the suites, the
// destructor only cleans up what a failed test left behind.
class RawInstance {
 public:
  RawInstance(PluginUnderTest& plugin, const std::string& config);
  ~RawInstance();
  RawInstance(const RawInstance&) = delete;
  RawInstance& operator=(const RawInstance&) = delete;

  const CallResult& created() const { return created_; }
  void* handle() const { return handle_; }
  // Calls destroy once and returns what it did.
  CallResult destroy();

 private:
  const ctx_plugin_descriptor& descriptor_;
  CallResult created_;
  void* handle_ = nullptr;
};

// Registers one test `suite.name` running `body` in the kit process (gtest assertions allowed
// inside). Only for tests that never touch the plugin (they report a kit or load problem).
void add_kit_test(const std::string& suite, const std::string& name, std::function<void()> body);

// Registers one test `suite.name` whose `body` runs in a supervised child with the plugin loaded
// (PluginUnderTest::run_supervised).
void add_plugin_test(const std::shared_ptr<PluginUnderTest>& plugin, const std::string& suite,
                     const std::string& name, std::function<void()> body);

// Suite registration, one per kind plus the generic ABI suite.
void register_abi_suite(const std::shared_ptr<PluginUnderTest>& plugin);
void register_verifier_suite(const std::shared_ptr<PluginUnderTest>& plugin);
void register_installer_suite(const std::shared_ptr<PluginUnderTest>& plugin);
void register_host_adapter_suite(const std::shared_ptr<PluginUnderTest>& plugin);

// `text` read by ctx's one strict JSON reader. Errors: InvalidArgument naming the rule broken.
Json parse_json(std::string_view text);

// Garbage payloads every JSON-taking op must survive with a code.
std::vector<std::string> garbage_inputs();

// gtest-friendly checks shared by the suites; they record failures, `what` names the call.
// A contained call must return (no escaped exception), with a code from the table that
// is not CTX_INTERNAL/CTX_UNKNOWN (those signal an unexpected exception), a NUL-terminated
// non-empty message on failure, an untouched error buffer on success, and no secret in the text.
void expect_contained_code(const PluginUnderTest& plugin, const Contained& call,
                           const std::string& what);
// A call that must succeed: CTX_OK, untouched error buffer, output a JSON object (returned).
Json expect_ok_object(const CallResult& call, const std::string& what);

}  // namespace ctx::conformance::detail

#endif  // CTX_SDK_CONFORMANCE_SRC_PLUGIN_UNDER_TEST_HPP_
