// Header-only C++ authoring layer over plugin_abi.h. A plugin is one class and one macro:
//
//   class MyVerifier : public ctx::sdk::Verifier {
//    public:
//     explicit MyVerifier(std::string_view config_json);   // or (const ctx::sdk::Host&, config)
//     bool verify(std::string_view assertion_json, std::string_view signing_bytes) override;
//   };
//   CTX_PLUGIN(MyVerifier, verifier, "my-verifier", "1.0.0");
//
// CTX_PLUGIN emits, from its one set of arguments, the identity ELF note (internal/note.hpp), the
// static descriptor, the kind's C ops table and `ctx_plugin_entry`; every export runs inside
// ctx::sdk::guard, so no C++ exception or type crosses the C ABI. Throw ctx::Error (its code is
// returned) or anything else (CTX_INTERNAL). Instances are called by one thread at a time.
#ifndef CTX_SDK_PLUGIN_HPP_
#define CTX_SDK_PLUGIN_HPP_

#include <ctx/abi/plugin_abi.h>
#include <ctx/sdk/error.hpp>
#include <ctx/sdk/internal/note.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

namespace ctx::sdk {

// Writes `message` (truncated to fit) into `err` when it is non-null and returns `code`.
inline ctx_code fail(ctx_error* err, ctx_code code, std::string_view message) noexcept {
  if (err != nullptr) {
    const std::size_t n = message.size() < sizeof err->message - 1 ? message.size()
                                                                    : sizeof err->message - 1;
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return code;
}

// Runs `body`; returns CTX_OK, or the code of the exception it threw (ctx::Error keeps its code,
// anything else is CTX_INTERNAL) with its text in `err`. Never throws.
template <typename Body>
ctx_code guard(ctx_error* err, Body&& body) noexcept {
  try {
    body();
    return CTX_OK;
  } catch (const Error& e) {
    const auto code = static_cast<ctx_code>(e.code());
    return fail(err, code == CTX_OK ? CTX_INTERNAL : code, e.what());
  } catch (const std::exception& e) {
    return fail(err, CTX_INTERNAL, e.what());
  } catch (...) {
    return fail(err, CTX_INTERNAL, "unknown exception");
  }
}

// Borrowed text of a byte view.
inline std::string_view view(ctx_bytes bytes) noexcept {
  return bytes.size == 0 ? std::string_view{}
                         : std::string_view(reinterpret_cast<const char*>(bytes.data), bytes.size);
}

// Byte view of borrowed text; valid while `text` lives.
inline ctx_bytes bytes(std::string_view text) noexcept {
  return ctx_bytes{reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// Appends `text` to the host's sink. Errors: ctx::Error with the sink's code when it refuses.
inline void write(ctx_sink* out, std::string_view text) {
  if (out == nullptr || out->write == nullptr) throw InvalidArgument("output sink is missing");
  const ctx_code code = out->write(out->context, reinterpret_cast<const uint8_t*>(text.data()),
                                   text.size());
  if (code != CTX_OK) throw Error("output sink refused the write", static_cast<ErrorCode>(code));
}

// The host services lent to an instance (ctx_host_api): valid for the instance's lifetime, cheap
// to copy. Services the host does not offer are no-ops (cancelled() false, now() 0).
class Host {
 public:
  enum class LogLevel : std::int32_t {
    kDebug = CTX_LOG_DEBUG,
    kInfo = CTX_LOG_INFO,
    kWarn = CTX_LOG_WARN,
    kError = CTX_LOG_ERROR,
  };

  explicit Host(const ctx_host_api* api) noexcept : api_(api) {}

  // Logs through the host (never write to stdout/stderr: the kit fails a plugin that does).
  void log(LogLevel level, std::string_view message) const noexcept {
    if (has(offsetof(ctx_host_api, log), api_ ? api_->log : nullptr)) {
      api_->log(api_->context, static_cast<std::int32_t>(level), message.data(), message.size());
    }
  }
  void progress(std::uint64_t done, std::uint64_t total) const noexcept {
    if (has(offsetof(ctx_host_api, progress), api_ ? api_->progress : nullptr)) {
      api_->progress(api_->context, done, total);
    }
  }
  // True when the host asks the current operation to stop early.
  bool cancelled() const noexcept {
    return has(offsetof(ctx_host_api, cancelled), api_ ? api_->cancelled : nullptr) &&
           api_->cancelled(api_->context) != 0;
  }
  // The host's trusted wall clock (microseconds since the Unix epoch, UTC), 0 when absent.
  std::int64_t now_unix_micros() const noexcept {
    return has(offsetof(ctx_host_api, now_unix_micros), api_ ? api_->now_unix_micros : nullptr)
               ? api_->now_unix_micros(api_->context)
               : 0;
  }

 private:
  template <typename Fn>
  bool has(std::size_t offset, Fn fn) const noexcept {
    return api_ != nullptr && api_->struct_size >= offset + sizeof fn && fn != nullptr;
  }
  const ctx_host_api* api_;
};

// The host's source of material bodies (ctx_body_source, ABI minor 1), borrowed for one
// install_from_source call.
class BodySource {
 public:
  // Receives one chunk of a file's bytes; throw to stop the stream (the exception is rethrown by
  // read()).
  using ChunkFn = std::function<void(std::string_view chunk)>;

  explicit BodySource(const ctx_body_source* source) noexcept : source_(source) {}

  // Streams the bytes of the material file `path` to `chunk`, in order; false when the host's
  // material has no such file. An exception `chunk` throws stops the stream and propagates.
  // Errors: InvalidArgument when the host passed no usable source; ctx::Error with the host's
  // code when it fails otherwise.
  bool read(std::string_view path, const ChunkFn& chunk) const {
    if (source_ == nullptr || source_->struct_size < offsetof(ctx_body_source, read) +
                                                         sizeof source_->read ||
        source_->read == nullptr) {
      throw InvalidArgument("host body source is missing");
    }
    Stream stream{&chunk, nullptr};
    ctx_sink sink{&stream, &Stream::write};
    const ctx_code code = source_->read(source_->context, bytes(path), &sink);
    if (stream.failure) std::rethrow_exception(stream.failure);
    if (code == CTX_NOT_FOUND) return false;
    if (code != CTX_OK) {
      throw Error("host body source failed", static_cast<ErrorCode>(code));
    }
    return true;
  }

 private:
  struct Stream {
    const ChunkFn* chunk;
    std::exception_ptr failure;
    static ctx_code write(void* context, const uint8_t* data, size_t size) noexcept {
      auto& self = *static_cast<Stream*>(context);
      if (self.failure) return CTX_ABORTED;
      try {
        (*self.chunk)(std::string_view(reinterpret_cast<const char*>(data), size));
        return CTX_OK;
      } catch (...) {
        self.failure = std::current_exception();
        return CTX_ABORTED;
      }
    }
  };
  const ctx_body_source* source_;
};

// Base of every plugin class. A plugin may shadow kAbiMinorRequired to require a newer ABI minor
// (it must not exceed CTX_ABI_MINOR, the minor the SDK headers describe).
class PluginBase {
 public:
  static constexpr std::uint32_t kAbiMinorRequired = 0;
  virtual ~PluginBase() = default;
};

// Human-decision verifier. Return true only when the proof in `assertion_json` is valid over
// `signing_bytes` for this instance's key material; false, or any exception, is a rejection.
class Verifier : public PluginBase {
 public:
  virtual bool verify(std::string_view assertion_json, std::string_view signing_bytes) = 0;
};

// Installer driver. Each request is a JSON object, each return value the reply JSON object text
// (fields: <ctx/conformance/conformance.hpp>). install_from_source (ABI minor 1) is optional: a
// class that does not override it leaves the C op NULL (the host then stages tree material in a
// directory and calls install).
class Installer : public PluginBase {
 public:
  virtual std::string target_identity() = 0;
  virtual std::string install(std::string_view request_json) = 0;
  virtual std::string activate(std::string_view request_json) = 0;
  virtual std::string deactivate(std::string_view request_json) = 0;
  virtual std::string reconcile(std::string_view request_json) = 0;
  virtual std::string install_from_source(std::string_view /*request_json*/,
                                          const BodySource& /*bodies*/) {
    throw Error("install_from_source is not offered", ErrorCode::kUnimplemented);
  }
};

// Host adapter. parse_hook: hook payload JSON -> {"kind" (CTX_HOOK_KIND_*), "event" (the host's
// name), "scope", "signals", "work_ref"}; render_reply: {"event", "actions", "challenge", ...}
// -> the host's native reply JSON. install_locations is
// optional: a class that does not override it leaves the C op NULL (the host sees "absent").
class HostAdapter : public PluginBase {
 public:
  virtual std::string parse_hook(std::string_view payload_json) = 0;
  virtual std::string render_reply(std::string_view actions_json) = 0;
  virtual std::string install_locations() {
    throw Error("install_locations is not offered", ErrorCode::kUnimplemented);
  }
};

// The `kind` argument of CTX_PLUGIN: tag types spelled as the macro token (installer, verifier,
// host_adapter), each naming its ABI code, note name and base class.
namespace plugin_kind {
struct installer {
  static constexpr std::uint32_t kCode = CTX_KIND_INSTALLER;
  static constexpr char kName[] = "installer";
  using Base = Installer;
};
struct verifier {
  static constexpr std::uint32_t kCode = CTX_KIND_VERIFIER;
  static constexpr char kName[] = "verifier";
  using Base = Verifier;
};
struct host_adapter {
  static constexpr std::uint32_t kCode = CTX_KIND_HOST_ADAPTER;
  static constexpr char kName[] = "host-adapter";
  using Base = HostAdapter;
};
}  // namespace plugin_kind

namespace internal {

template <typename T>
T& self(void* instance) {
  if (instance == nullptr) throw InvalidArgument("plugin instance is missing");
  return *static_cast<T*>(instance);
}

template <typename T>
T* construct(const ctx_host_api* host, std::string_view config) {
  if constexpr (std::is_constructible_v<T, const Host&, std::string_view>) {
    return new T(Host(host), config);
  } else if constexpr (std::is_constructible_v<T, std::string_view>) {
    return new T(config);
  } else {
    static_assert(std::is_default_constructible_v<T>,
                  "a ctx plugin class needs a constructor (const ctx::sdk::Host&, "
                  "std::string_view config), (std::string_view config) or ()");
    return new T();
  }
}

template <typename T>
ctx_code create(const ctx_host_api* host, ctx_bytes config, void** instance,
                ctx_error* err) noexcept {
  return guard(err, [&] {
    if (instance == nullptr) throw InvalidArgument("instance out-parameter is missing");
    *instance = construct<T>(host, view(config));
  });
}

template <typename T>
ctx_code destroy(void* instance, ctx_error* err) noexcept {
  return guard(err, [&] { delete static_cast<T*>(instance); });
}

template <typename T>
ctx_code verify(void* instance, ctx_bytes assertion_json, ctx_bytes signing_bytes,
                uint32_t* verdict, ctx_error* err) noexcept {
  if (verdict != nullptr) *verdict = CTX_VERDICT_REJECTED;
  return guard(err, [&] {
    if (verdict == nullptr) throw InvalidArgument("verify needs a verdict out-parameter");
    if (self<T>(instance).verify(view(assertion_json), view(signing_bytes))) {
      *verdict = CTX_VERDICT_ACCEPTED;
    }
  });
}

// An op taking no request: calls `Method` and writes its reply into the sink.
template <typename T, typename Base, std::string (Base::*Method)()>
ctx_code no_request_op(void* instance, ctx_sink* out, ctx_error* err) noexcept {
  return guard(err, [&] { write(out, (self<T>(instance).*Method)()); });
}

// An op taking a JSON request: calls `Method(request)` and writes its reply into the sink.
template <typename T, typename Base, std::string (Base::*Method)(std::string_view)>
ctx_code request_op(void* instance, ctx_bytes request, ctx_sink* out, ctx_error* err) noexcept {
  return guard(err, [&] { write(out, (self<T>(instance).*Method)(view(request))); });
}

// install_from_source: the request and the host's body source to Installer::install_from_source.
template <typename T>
ctx_code install_from_source_op(void* instance, ctx_bytes request, const ctx_body_source* bodies,
                                ctx_sink* out, ctx_error* err) noexcept {
  return guard(err, [&] {
    write(out, self<T>(instance).install_from_source(view(request), BodySource(bodies)));
  });
}

// The static C tables of plugin class T of kind Kind.
template <typename T, typename Kind>
struct Tables;

template <typename T>
struct Tables<T, plugin_kind::verifier> {
  static constexpr ctx_verifier_ops kOps = {sizeof(ctx_verifier_ops), &verify<T>};
};

template <typename T>
struct Tables<T, plugin_kind::installer> {
  // As install_locations below: overriding install_from_source is what fills its op.
  static constexpr bool kHasInstallFromSource =
      !std::is_same_v<decltype(&T::install_from_source),
                      std::string (Installer::*)(std::string_view, const BodySource&)>;
  static constexpr ctx_installer_ops kOps = {
      sizeof(ctx_installer_ops),
      &no_request_op<T, Installer, &Installer::target_identity>,
      &request_op<T, Installer, &Installer::install>,
      &request_op<T, Installer, &Installer::activate>,
      &request_op<T, Installer, &Installer::deactivate>,
      &request_op<T, Installer, &Installer::reconcile>,
      kHasInstallFromSource ? &install_from_source_op<T> : nullptr,
  };
};

template <typename T>
struct Tables<T, plugin_kind::host_adapter> {
  // A class overriding install_locations makes &T::install_locations a member of T (or of a base
  // between T and HostAdapter); otherwise the name finds HostAdapter's default and the op is NULL.
  static constexpr bool kHasInstallLocations =
      !std::is_same_v<decltype(&T::install_locations), std::string (HostAdapter::*)()>;
  static constexpr ctx_host_adapter_ops kOps = {
      sizeof(ctx_host_adapter_ops),
      &request_op<T, HostAdapter, &HostAdapter::parse_hook>,
      &request_op<T, HostAdapter, &HostAdapter::render_reply>,
      kHasInstallLocations ? &no_request_op<T, HostAdapter, &HostAdapter::install_locations>
                           : nullptr,
  };
};

template <typename T, typename Kind>
constexpr ctx_plugin_descriptor make_descriptor(const char* id, const char* version) {
  return ctx_plugin_descriptor{CTX_ABI_MAJOR,    sizeof(ctx_plugin_descriptor),
                               T::kAbiMinorRequired, CTX_ABI_MINOR,
                               Kind::kCode,      id,
                               version,          &create<T>,
                               &destroy<T>,      &Tables<T, Kind>::kOps};
}

}  // namespace internal
}  // namespace ctx::sdk

// CTX_PLUGIN(Class, kind, "id", "version"): makes `Class` (derived from the base class of `kind`:
// installer -> ctx::sdk::Installer, verifier -> Verifier, host_adapter -> HostAdapter) a plugin.
// Use once per shared object, at namespace scope, followed by a semicolon.
// id: [a-z0-9][a-z0-9._-]{0,63}; version: semver; both checked at compile time. The note's abi
// minor is Class::kAbiMinorRequired.
#define CTX_PLUGIN(Class, kind, id, version)                                                     \
  static_assert(std::is_base_of_v<::ctx::sdk::plugin_kind::kind::Base, Class>,                   \
                "CTX_PLUGIN: " #Class " must derive from the base class of kind " #kind);        \
  static_assert(Class::kAbiMinorRequired <= CTX_ABI_MINOR,                                       \
                "CTX_PLUGIN: " #Class " requires an ABI minor newer than these SDK headers");    \
  CTX_SDK_INTERNAL_EMIT_NOTE(::ctx::sdk::plugin_kind::kind, id, version, CTX_ABI_MAJOR,          \
                             Class::kAbiMinorRequired);                                          \
  static constexpr ctx_plugin_descriptor ctx_plugin_descriptor_of_this_module =                  \
      ::ctx::sdk::internal::make_descriptor<Class, ::ctx::sdk::plugin_kind::kind>(id, version);  \
  extern "C" CTX_PLUGIN_EXPORT const ctx_plugin_descriptor* ctx_plugin_entry(                    \
      const ctx_host_negotiation* /*host*/) {                                                    \
    return &ctx_plugin_descriptor_of_this_module;                                                \
  }                                                                                              \
  static_assert(true, "")

// For deliberately hand-built plugins only (test fixtures that must break a rule CTX_PLUGIN
// enforces): emits just the identity note. `kind` is a ctx::sdk::plugin_kind token; major and
// minor are constant expressions. Pair it with a hand-written descriptor and
// CTX_DEFINE_PLUGIN_ENTRY.
#define CTX_PLUGIN_NOTE(kind, id, version, major, minor) \
  CTX_SDK_INTERNAL_EMIT_NOTE(::ctx::sdk::plugin_kind::kind, id, version, major, minor)

// For hand-built plugins only: defines the exported entry returning `descriptor` (a static
// ctx_plugin_descriptor). CTX_PLUGIN does this for you.
#define CTX_DEFINE_PLUGIN_ENTRY(descriptor)                                             \
  extern "C" CTX_PLUGIN_EXPORT const ctx_plugin_descriptor* ctx_plugin_entry(           \
      const ctx_host_negotiation* /*host*/) {                                           \
    return &(descriptor);                                                               \
  }

#endif  // CTX_SDK_PLUGIN_HPP_
