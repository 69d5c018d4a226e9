#include "sdk/conformance/src/plugin_under_test.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctx/sdk/error.hpp>
#include <ctx/support/strict_json.hpp>
#include <fstream>
#include <sstream>
#include <utility>

namespace ctx::conformance::detail {

Json parse_json(std::string_view text) {
  Json value;
  if (const auto failure = support::read_strict_json(text, &value, 64)) {
    throw InvalidArgument(support::describe(*failure));
  }
  return value;
}
namespace {

namespace fs = std::filesystem;

constexpr char kFill = 'X';
constexpr char kTempDirToken[] = "@TEMP_DIR@";
constexpr std::size_t kMinSecretLength = 16;

// Kit host services: logging is dropped, nothing is ever cancelled, the clock is the system's.
void host_log(void*, int32_t, const char*, size_t) noexcept {}
void host_progress(void*, uint64_t, uint64_t) noexcept {}
int32_t host_cancelled(void*) noexcept { return 0; }
int64_t host_now(void*) noexcept {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Replaces every "@TEMP_DIR@" inside strings of `value` with `dir`.
void substitute(Json& value, const std::string& dir) {
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    for (auto at = text.find(kTempDirToken); at != std::string::npos;
         at = text.find(kTempDirToken, at + dir.size())) {
      text.replace(at, std::strlen(kTempDirToken), dir);
    }
    value = text;
  } else if (value.is_structured()) {
    for (auto& item : value) substitute(item, dir);
  }
}

void collect_strings(const Json& value, std::vector<std::string>& out) {
  if (value.is_string()) {
    if (value.get_ref<const std::string&>().size() >= kMinSecretLength) {
      out.push_back(value.get<std::string>());
    }
  } else if (value.is_structured()) {
    for (const auto& item : value) collect_strings(item, out);
  }
}

class FunctionTest : public ::testing::Test {
 public:
  explicit FunctionTest(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};

}  // namespace

std::string Contained::describe() const {
  switch (ending) {
    case Ending::kReturned:
      return "returned code " + std::to_string(result.code);
    case Ending::kThrew:
      return "let a C++ exception cross the C ABI";
  }
  return "ended unexpectedly";
}

Sink::Sink(ctx_code refusal) : refusal_(refusal), sink_{this, &Sink::write} {}

ctx_code Sink::write(void* context, const uint8_t* data, size_t size) noexcept {
  auto* self = static_cast<Sink*>(context);
  if (self->refusal_ != CTX_OK) return self->refusal_;
  if (size == 0) return CTX_OK;
  if (data == nullptr) return CTX_INVALID_ARGUMENT;
  try {
    self->text_.append(reinterpret_cast<const char*>(data), size);
  } catch (...) {
    return CTX_RESOURCE_EXHAUSTED;
  }
  return CTX_OK;
}

CallResult invoke(const std::string& name, const std::function<ctx_code(ctx_error*)>& call) {
  ctx_error err;
  std::memset(err.message, kFill, sizeof err.message);
  CallResult result;
  {
    const CallScope scope(name);
    result.code = call(&err);
  }
  const auto* nul = static_cast<const char*>(std::memchr(err.message, '\0', sizeof err.message));
  result.message_terminated = nul != nullptr;
  result.message.assign(err.message, nul != nullptr ? static_cast<std::size_t>(nul - err.message)
                                                    : sizeof err.message);
  result.error_untouched = true;
  for (const char c : err.message) result.error_untouched = result.error_untouched && c == kFill;
  return result;
}

Contained contain(const std::function<CallResult()>& call) {
  Contained contained;
  try {
    contained.result = call();
  } catch (...) {
    contained.ending = Contained::Ending::kThrew;
  }
  return contained;
}

PluginUnderTest::PluginUnderTest(fs::path plugin, std::optional<fs::path> config_file,
                                 fs::path base, std::chrono::milliseconds call_deadline)
    : plugin_(fs::absolute(plugin)),
      config_file_(std::move(config_file)),
      base_(std::move(base)),
      call_deadline_(call_deadline) {
  host_api_ = ctx_host_api{sizeof(ctx_host_api), this,     &host_log, &host_progress,
                           &host_cancelled,      &host_now};
  fs::create_directories(base_ / "sandbox" / "home");
  fs::create_directories(base_ / "sandbox" / "tmp");
  fs::create_directories(base_ / "instances");
  sandbox_before_ = sandbox_now();
  secrets_.push_back(kInputMarker);
  if (!config_file_) return;
  std::ifstream in(*config_file_, std::ios::binary);
  if (!in) {
    failure_ = "cannot read the kit config " + config_file_->string();
    return;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    kit_config_ = parse_json(text.str());
    if (!kit_config_.is_object()) throw InvalidArgument("the kit config is not a json object");
  } catch (const std::exception& e) {
    failure_ = "kit config " + config_file_->string() + ": " + e.what();
    return;
  }
  // The test vector is secret material too: no message may repeat its proof or signing bytes.
  if (const auto verifier = kit_config_.find("verifier"); verifier != kit_config_.end()) {
    collect_strings(*verifier, secrets_);
  }
}

Probe PluginUnderTest::probe() {
  Probe probe;
  if (!failure_.empty()) {
    probe.failure = failure_;
    return probe;
  }
  const fs::path lock_path = base_ / "plugins.lock.json";
  const Supervision loaded = supervise(
      [&] {
        const plugins::PluginLoader loader(base_ / "state");
        in_sandbox([&] {
          // Pinning reads the note from the bytes and executes nothing: kit work, not a call. The
          // temporary lock is written the way `ctx plugin pin` writes one (flock, atomic rename).
          const plugins::LockEntry pinned = loader.inspect_for_pin(plugin_);
          plugins::LockFile::update(lock_path,
                                    [&](plugins::LockFile& lock) { lock.upsert(pinned); });
        });
        if (!load()) {
          send_report(Json{{"failure", failure_}}.dump());
          return;
        }
        const ctx_plugin_descriptor& d = descriptor();
        bool install_locations = false;
        if (loaded_->kind() == plugins::PluginKind::kHostAdapter) {
          const ctx_host_adapter_ops& ops = *loaded_->host_adapter_ops();
          install_locations =
              ops.struct_size >= sizeof(ctx_host_adapter_ops) && ops.install_locations != nullptr;
        }
        bool install_from_source = false;
        if (loaded_->kind() == plugins::PluginKind::kInstaller) {
          const ctx_installer_ops& ops = *loaded_->installer_ops();
          install_from_source = ops.struct_size >= sizeof(ctx_installer_ops) &&
                                ops.install_from_source != nullptr;
        }
        send_report(Json{{"kind", d.kind},
                         {"install_locations", install_locations},
                         {"install_from_source", install_from_source}}
                        .dump());
      },
      call_deadline_, kit_deadline());
  std::string text;
  const auto add_line = [&](const std::string& line) { text += (text.empty() ? "" : "\n") + line; };
  for (const ChildFailure& f : loaded.failures) add_line(f.message);
  for (const std::string& problem : loaded.problems()) add_line(problem);
  Json report;
  if (!loaded.reports.empty()) report = parse_json(loaded.reports.front());
  if (report.contains("failure")) add_line(report.at("failure").get<std::string>());
  if (!loaded.clean() || !report.contains("kind")) {
    probe.failure = text.empty() ? "the plugin did not report its kind" : text;
    return probe;
  }
  probe.loaded = true;
  probe.kind = static_cast<plugins::PluginKind>(report.at("kind").get<std::uint32_t>());
  probe.has_install_locations = report.at("install_locations").get<bool>();
  kind_ = probe.kind;
  probe.has_install_from_source = report.at("install_from_source").get<bool>();
  has_install_locations_ = probe.has_install_locations;
  has_install_from_source_ = probe.has_install_from_source;

  if (!has_plugin_config()) {
    // A plugin that cannot start without configuration gets one clear answer instead of a
    // failure in every test that creates an instance.
    const Supervision created = supervise(
        [&] {
          if (!load()) return;
          RawInstance instance(*this, "");
          send_report(Json{{"code", instance.created().code},
                           {"message", instance.created().message}}
                          .dump());
        },
        call_deadline_, kit_deadline());
    if (created.clean() && !created.reports.empty()) {
      const Json answer = parse_json(created.reports.front());
      // CTX_INTERNAL and CTX_UNKNOWN are a create that broke, not one that refused: the suites
      // report those.
      const int code = answer.at("code").get<int>();
      if (code != CTX_OK && code != CTX_INTERNAL && code != CTX_UNKNOWN) {
        probe.needs_config = answer.at("message").get<std::string>();
      }
    }
  }
  return probe;
}

bool PluginUnderTest::load() {
  if (!failure_.empty()) return false;
  try {
    const plugins::PluginLoader loader(base_ / "state");
    const plugins::LockFile pinned = plugins::LockFile::load(base_ / "plugins.lock.json");
    if (pinned.entries().size() != 1) throw Error("the temporary lock does not hold one entry");
    entry_ = pinned.entries().front();
    in_sandbox([&] {
      const CallScope scope("loading (its constructors and ctx_plugin_entry)");
      loaded_ = loader.load(entry_);
    });
  } catch (const std::exception& e) {
    failure_ = e.what();
    return false;
  }
  kind_ = loaded_->kind();
  // RTLD_NOLOAD finds the object the loader already mapped; nothing is loaded a second time.
  void* handle = ::dlopen(loaded_->library_path().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle != nullptr) {
    entry_function_ =
        reinterpret_cast<ctx_plugin_entry_fn>(::dlsym(handle, CTX_PLUGIN_ENTRY_SYMBOL));
    ::dlclose(handle);  // the loader's own handle keeps it resident
  }
  if (entry_function_ == nullptr) {
    failure_ = "the loaded plugin's entry symbol cannot be resolved again";
    return false;
  }
  return true;
}

const plugins::LoadedPlugin& PluginUnderTest::loaded() const {
  if (loaded_ == nullptr) {
    throw Error("the plugin is loaded only inside a supervised test (register it with "
                "add_plugin_test)");
  }
  return *loaded_;
}

void PluginUnderTest::run_supervised(const std::function<void()>& body) {
  const Supervision supervision = supervise(
      [&] {
        if (!load()) {
          ADD_FAILURE() << "the plugin cannot be loaded from the temporary lock: " << failure_;
          return;
        }
        body();
      },
      call_deadline_, kit_deadline());
  report_supervision(supervision);
}

std::chrono::milliseconds PluginUnderTest::kit_deadline() const {
  // The kit's own work between two plugin calls is small; this bounds a test whose plugin left a
  // thread running that wedges the child outside any call.
  return std::max(std::chrono::milliseconds(60000), call_deadline_ * 10);
}

std::set<std::string> PluginUnderTest::sandbox_now() const {
  std::set<std::string> files;
  const fs::path sandbox = base_ / "sandbox";
  for (const auto& item : fs::recursive_directory_iterator(sandbox)) {
    files.insert(fs::relative(item.path(), sandbox).string());
  }
  return files;
}

void PluginUnderTest::in_sandbox(const std::function<void()>& body) const {
  // The working directory, HOME and TMPDIR all point into the sandbox while `body` runs, so
  // files a plugin creates through any of them show up in sandbox_now().
  const fs::path sandbox = base_ / "sandbox";
  const fs::path previous = fs::current_path();
  std::vector<std::pair<const char*, std::optional<std::string>>> saved;
  for (const char* name : {"HOME", "TMPDIR"}) {
    const char* value = std::getenv(name);
    saved.emplace_back(name, value != nullptr ? std::optional<std::string>(value) : std::nullopt);
  }
  const auto restore = [&] {
    fs::current_path(previous);
    for (const auto& [name, value] : saved) {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  };
  fs::current_path(sandbox);
  ::setenv("HOME", (sandbox / "home").c_str(), 1);
  ::setenv("TMPDIR", (sandbox / "tmp").c_str(), 1);
  try {
    body();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

fs::path PluginUnderTest::fresh_directory() {
  std::string pattern = (base_ / "instances" / "XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw SystemError("conformance kit could not create an instance directory");
  }
  return pattern;
}

std::string PluginUnderTest::fresh_config() {
  const auto config = kit_config_.find("plugin_config");
  if (config == kit_config_.end()) return {};
  const fs::path dir = fresh_directory();
  last_instance_dir_ = dir;
  Json value = *config;
  substitute(value, dir.string());
  collect_strings(value, secrets_);
  return value.dump();
}

std::string PluginUnderTest::leaked_secret(const std::string& message) const {
  for (const std::string& secret : secrets_) {
    if (message.find(secret) != std::string::npos) return secret;
  }
  return {};
}

RawInstance::RawInstance(PluginUnderTest& plugin, const std::string& config)
    : descriptor_(plugin.descriptor()) {
  created_ = invoke("create", [&](ctx_error* err) {
    return descriptor_.create(
        plugin.host_api(),
        ctx_bytes{reinterpret_cast<const uint8_t*>(config.data()), config.size()}, &handle_, err);
  });
  if (created_.code != CTX_OK) handle_ = nullptr;
}

RawInstance::~RawInstance() {
  if (handle_ != nullptr) destroy();
}

CallResult RawInstance::destroy() {
  void* handle = std::exchange(handle_, nullptr);
  return invoke("destroy", [&](ctx_error* err) { return descriptor_.destroy(handle, err); });
}

void add_kit_test(const std::string& suite, const std::string& name, std::function<void()> body) {
  ::testing::RegisterTest(
      suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
      [body = std::move(body)]() -> FunctionTest* { return new FunctionTest(body); });
}

void add_plugin_test(const std::shared_ptr<PluginUnderTest>& plugin, const std::string& suite,
                     const std::string& name, std::function<void()> body) {
  add_kit_test(suite, name, [plugin, body = std::move(body)] { plugin->run_supervised(body); });
}

std::vector<std::string> garbage_inputs() {
  const std::string marker = kInputMarker;
  return {
      "",
      std::string("\xff\xfe\x00\x01 ", 5) + marker,
      "{",
      "[1,2,3]",
      "null",
      "\"" + marker + "\"",
      "{\"" + marker + "\":\"" + marker + "\"}",
      R"({"capability_id":7,"content":[],"content_sha256":{},"capabilities":{},"proof":")" +
          marker + R"(","hook_event_name":{},"session_id":[],"actions":"x"})",
      R"({"a":1,"a":2})",
      "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}",
      "{\"x\":\"" + std::string(1u << 20, 'a') + "\"}",
  };
}

void expect_contained_code(const PluginUnderTest& plugin, const Contained& call,
                           const std::string& what) {
  ASSERT_EQ(call.ending, Contained::Ending::kReturned) << what << " " << call.describe();
  const CallResult& r = call.result;
  EXPECT_TRUE(r.code >= CTX_OK && r.code <= CTX_UNAUTHENTICATED)
      << what << " returned a code outside the ABI table: " << r.code;
  EXPECT_NE(r.code, CTX_INTERNAL)
      << what
      << " failed with CTX_INTERNAL, i.e. an unexpected exception inside the plugin: " << r.message;
  EXPECT_NE(r.code, CTX_UNKNOWN) << what << " failed with CTX_UNKNOWN: " << r.message;
  if (r.code == CTX_OK) {
    EXPECT_TRUE(r.error_untouched) << what << " succeeded but wrote into the error buffer";
  } else {
    EXPECT_TRUE(r.message_terminated) << what << " left the error message without a NUL";
    EXPECT_FALSE(r.message.empty()) << what << " failed without an error message";
  }
  EXPECT_EQ(plugin.leaked_secret(r.message), "")
      << what << " put input or configuration text into its error message";
}

Json expect_ok_object(const CallResult& call, const std::string& what) {
  EXPECT_EQ(call.code, CTX_OK) << what << " failed (code " << call.code << "): " << call.message;
  if (call.code != CTX_OK) return Json();
  EXPECT_TRUE(call.error_untouched) << what << " succeeded but wrote into the error buffer";
  try {
    Json value = parse_json(call.output);
    EXPECT_TRUE(value.is_object()) << what << " wrote JSON that is not an object";
    return value.is_object() ? value : Json();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " wrote output that is not JSON: " << e.what();
    return Json();
  }
}

}  // namespace ctx::conformance::detail
