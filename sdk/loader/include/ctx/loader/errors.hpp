// Typed errors of the plugin layer. Every message names the plugin (or file) and the reason;
// the quoted keywords are contract, the rest may change. None of them is worth retrying as is.
#ifndef CTX_LOADER_ERRORS_HPP_
#define CTX_LOADER_ERRORS_HPP_

#include <ctx/sdk/error.hpp>
#include <string>

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

// A path is unsafe to read (plugin file, lock file, or a directory on the way from "/"):
// "symlink", "writable" (group/world, directory not sticky), "not a regular file", "owner"
// (neither us nor root), "too large", "size" (differs from the pin), "inside the state
// directory". Code: kPermissionDenied. Retry: after fixing it.
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

// The file is no ELF plugin the loader can read safely ("not a loadable elf plugin: <reason>"):
// bad headers, a program header, dynamic entry, string, hash table or note out of bounds, no
// entry symbol reachable through the dynamic symbol hash. Code: kFailedPrecondition. Retry: no.
class MalformedElf : public PluginError {
 public:
  explicit MalformedElf(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// The identity note (.note.ctx.plugin, name "ctx", type 1) is missing, repeated, not canonical
// JSON of {abi,id,kind,version}, or disagrees with the lock ("note") or with what the entry
// returned ("descriptor"). Code: kFailedPrecondition. Retry: no.
class PluginNoteMismatch : public PluginError {
 public:
  explicit PluginNoteMismatch(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// A dependency would let unpinned code run: DT_RPATH/DT_RUNPATH, a DT_NEEDED with '/', a
// filter/audit entry, a soname that does not resolve to a root-owned, not other-writable file in
// a root-owned directory chain, or needed sonames other than the lock records.
// Code: kPermissionDenied. Retry: after rebuilding or re-pinning the plugin.
class UnsafeDependency : public PluginError {
 public:
  explicit UnsafeDependency(const std::string& message)
      : PluginError(message, ErrorCode::kPermissionDenied) {}
};

// LD_PRELOAD, LD_AUDIT or LD_LIBRARY_PATH is set (the message names it); set
// CTX_ALLOW_LOADER_ENV=1 to load anyway. Code: kFailedPrecondition. Retry: without the variable.
class LoaderEnvironmentRefused : public PluginError {
 public:
  explicit LoaderEnvironmentRefused(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// A supervised trial load failed: the child "exited with status N before answering", was
// "killed by SIGxxx", gave "no answer within N s" or "wrote to stdout/stderr", or the load in
// the child failed (its message is kept). Code: kFailedPrecondition. Retry: no.
class PluginTrialFailed : public PluginError {
 public:
  explicit PluginTrialFailed(const std::string& message)
      : PluginError(message, ErrorCode::kFailedPrecondition) {}
};

// `pin` found (kind, id) already pinned to other bytes ("already pinned ... pass --replace").
// Code: kAlreadyExists. Retry: with --replace after checking the new bytes.
class PinConflict : public PluginError {
 public:
  explicit PinConflict(const std::string& message)
      : PluginError(message, ErrorCode::kAlreadyExists) {}
};

}  // namespace ctx::plugins

#endif  // CTX_LOADER_ERRORS_HPP_
