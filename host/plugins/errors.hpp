// Typed errors of the plugin layer. Every message names the plugin (or file) and the reason;
// the quoted keywords are contract, the rest may change. None of them is worth retrying as is.
#ifndef CTX_HOST_PLUGINS_ERRORS_HPP_
#define CTX_HOST_PLUGINS_ERRORS_HPP_

#include <string>

#include "host/core/error.hpp"

namespace ctx::plugins {

// Base of every plugin-layer error except PluginFileNotFound (a ctx::NotFound).
class PluginError : public Error {
 public:
  PluginError(const std::string& message, ErrorCode code) : Error(message, code) {}
};

// The bytes read from a pinned file do not hash to the pin ("digest ... expected X got Y").
// Code: kDataLoss. Retry: never; re-pin only after checking where the new bytes came from.
class PluginDigestMismatch : public PluginError {
 public:
  PluginDigestMismatch(const std::string& plugin, const std::string& expected,
                       const std::string& actual);
  const std::string& expected() const noexcept { return expected_; }
  const std::string& actual() const noexcept { return actual_; }

 private:
  std::string expected_, actual_;
};

// The requested plugin has no lock entry ("not pinned"). Code: kFailedPrecondition.
// Retry: after `ctx plugin pin`.
class PluginNotPinned : public PluginError {
 public:
  explicit PluginNotPinned(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// The pinned path is unsafe to read: "symlink", "writable" (group/world), "not a regular file",
// "owner" (neither us nor root), "too large". Code: kPermissionDenied. Retry: after fixing it.
class UnsafePluginFile : public PluginError {
 public:
  explicit UnsafePluginFile(const std::string& message)
      : PluginError(message, ErrorCode::kPermissionDenied) {}
};

// The pinned path does not exist ("not found"). Code: kNotFound. Retry: no.
class PluginFileNotFound : public NotFound {
 public:
  explicit PluginFileNotFound(const std::string& message) : NotFound(message) {}
};

// The file does not export ctx_plugin_entry ("entry symbol"), or is no loadable ELF object for
// this machine. Code: kFailedPrecondition. Retry: no.
class MissingEntrySymbol : public PluginError {
 public:
  explicit MissingEntrySymbol(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// dlopen itself failed; the message keeps dlerror's text. Code: kFailedPrecondition.
class PluginLoadFailed : public PluginError {
 public:
  explicit PluginLoadFailed(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// Version rule violated; names both versions ("major", or "requires plugin ABI 1.3; this host
// provides 1.0"). Code: kFailedPrecondition. Retry: no.
class PluginAbiMismatch : public PluginError {
 public:
  explicit PluginAbiMismatch(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// The descriptor or its ops table is invalid ("required op <name> is null", "invalid id", ...).
// Code: kFailedPrecondition. Retry: no.
class BrokenPluginTable : public PluginError {
 public:
  explicit BrokenPluginTable(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// The loaded plugin declares another kind/id/version/abi than its lock entry ("declares"), or
// the entry is pinned for another platform ("platform"). Code: kFailedPrecondition. Retry: no.
class PluginIdentityMismatch : public PluginError {
 public:
  explicit PluginIdentityMismatch(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// A second plugin with the same kind and id ("duplicate"). Code: kAlreadyExists. Retry: no.
class DuplicatePlugin : public PluginError {
 public:
  explicit DuplicatePlugin(const std::string& message)
      : PluginError(message, ErrorCode::kAlreadyExists) {}
};

// plugins.lock.json cannot be read as a lock file ("malformed lock file ..."); it is left as is.
// Code: kFailedPrecondition. Retry: after fixing the file.
class MalformedLockFile : public PluginError {
 public:
  explicit MalformedLockFile(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// A plugin call returned a reply the host cannot use ("returned invalid json").
// Code: kInternal. Retry: no.
class PluginProtocolError : public PluginError {
 public:
  explicit PluginProtocolError(const std::string& message)
      : PluginError(message, ErrorCode::kInternal) {}
};

}  // namespace ctx::plugins

#endif  // CTX_HOST_PLUGINS_ERRORS_HPP_
