// Header-only C++ authoring layer over plugin_abi.h: the export macro, the exception guard every
// exported body runs inside, and small helpers for byte views and sinks.
//
// A plugin author writes plain C++ (throwing ctx::Error or anything else) and wraps each exported
// function body in ctx::sdk::guard(err, [&] { ... }); no exception ever crosses the C ABI.
#ifndef CTX_SDK_PLUGIN_HPP_
#define CTX_SDK_PLUGIN_HPP_

#include <ctx/abi/plugin_abi.h>
#include <ctx/sdk/error.hpp>

#include <cstring>
#include <exception>
#include <string>
#include <string_view>

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

}  // namespace ctx::sdk

// Defines the one exported entry symbol returning `descriptor` (a static ctx_plugin_descriptor).
#define CTX_DEFINE_PLUGIN_ENTRY(descriptor)                                             \
  extern "C" CTX_PLUGIN_EXPORT const ctx_plugin_descriptor* ctx_plugin_entry(           \
      const ctx_host_negotiation* /*host*/) {                                           \
    return &(descriptor);                                                               \
  }

#endif  // CTX_SDK_PLUGIN_HPP_
