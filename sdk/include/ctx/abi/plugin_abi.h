/* ctx plugin ABI: the only contract between the ctx host and a plugin shared object.
 *
 * Conventions (they hold for every declaration below):
 *  1. Only C types cross: fixed-width integers, NUL-terminated UTF-8 `const char*`, `ctx_bytes`
 *     views, opaque `void*` instances and UTF-8 JSON payloads. Never C++ types or exceptions.
 *  2. Every plugin function returns a `ctx_code` (CTX_OK == 0) and takes a caller-owned
 *     `ctx_error*` last. On failure the callee writes at most `sizeof message - 1` bytes plus a
 *     NUL into it; on success it leaves it untouched. Only `ctx_plugin_entry` returns otherwise.
 *  3. Inputs are borrowed for the duration of the call. Variable-size output goes into a
 *     host-owned `ctx_sink`, so no memory ever changes owner across the boundary.
 *  4. Tables (descriptor, ops, host services) start with `struct_size` (descriptor: after
 *     `abi_major`) and are append-only: a reader treats every field past `struct_size` as absent.
 *  5. Version rule: the plugin's `abi_major` equals the host's; the plugin's
 *     `abi_minor_required` is <= the host's maximum minor; the plugin's `abi_minor_built` is >= the
 *     host's minimum minor. Otherwise the host refuses the plugin and names both versions.
 *  6. `ctx_plugin_entry` has no side effects and returns the same static descriptor every call.
 *  7. Instances are not shared across threads by the host unless the plugin says otherwise.
 *  8. On a non-OK return, out-parameters (`*instance`, `*verdict`) are left untouched or set to
 *     their empty value (NULL, CTX_VERDICT_REJECTED); the host never reads them then.
 *
 * WARNING: fields are only ever appended. Never reorder, remove or retype a field.
 */
#ifndef CTX_ABI_PLUGIN_ABI_H_
#define CTX_ABI_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTX_ABI_MAJOR 1u
/* The newest minor this header describes. A plugin built against it reports it as built. */
#define CTX_ABI_MINOR 1u

#if defined(_WIN32)
#define CTX_PLUGIN_EXPORT __declspec(dllexport)
#else
#define CTX_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* One code table for the whole system (canonical gRPC numbering): plugin returns, host
 * `ctx::ErrorCode`, and the server's JSON-RPC `error.code` share these integers. */
typedef int32_t ctx_code;
#define CTX_OK 0
#define CTX_CANCELLED 1
#define CTX_UNKNOWN 2
#define CTX_INVALID_ARGUMENT 3
#define CTX_DEADLINE_EXCEEDED 4
#define CTX_NOT_FOUND 5
#define CTX_ALREADY_EXISTS 6
#define CTX_PERMISSION_DENIED 7
#define CTX_RESOURCE_EXHAUSTED 8
#define CTX_FAILED_PRECONDITION 9
#define CTX_ABORTED 10
#define CTX_OUT_OF_RANGE 11
#define CTX_UNIMPLEMENTED 12
#define CTX_INTERNAL 13
#define CTX_UNAVAILABLE 14
#define CTX_DATA_LOSS 15
#define CTX_UNAUTHENTICATED 16

/* Caller-owned error text; written only on failure, always NUL-terminated. */
typedef struct ctx_error {
  char message[512];
} ctx_error;

/* A borrowed byte view, valid for the call only. `data` may be NULL when `size` is 0. */
typedef struct ctx_bytes {
  const uint8_t* data;
  size_t size;
} ctx_bytes;

/* Host-owned output buffer. `write` appends; it may be called any number of times in one call.
 * A non-OK return from `write` must be returned by the plugin function unchanged. */
typedef struct ctx_sink {
  void* context;
  ctx_code (*write)(void* context, const uint8_t* data, size_t size);
} ctx_sink;

/* ABI minor 1. A host-owned source of material bodies, borrowed for one call (the installer's
 * install_from_source). `read` writes the bytes of the material file `path` (UTF-8, a path of the
 * request's manifest) into `out` in one or more writes and returns CTX_OK; CTX_NOT_FOUND when the
 * material has no such file. When a write returns non-OK, `read` stops writing and returns that
 * code unchanged: a plugin caps what it accepts by refusing a write (past a file's listed size,
 * past its size caps, on cancellation). `read` may be called once per path. */
typedef struct ctx_body_source {
  uint32_t struct_size;
  void* context;
  ctx_code (*read)(void* context, ctx_bytes path, ctx_sink* out);
} ctx_body_source;

/* Log levels for ctx_host_api.log. */
#define CTX_LOG_DEBUG 0
#define CTX_LOG_INFO 1
#define CTX_LOG_WARN 2
#define CTX_LOG_ERROR 3

/* Services the host lends to a plugin instance; valid until the instance is destroyed.
 * Every function pointer may be called from any thread the host calls the instance on. */
typedef struct ctx_host_api {
  uint32_t struct_size;
  void* context;
  void (*log)(void* context, int32_t level, const char* message, size_t size);
  void (*progress)(void* context, uint64_t done, uint64_t total);
  /* Non-zero when the host asks the current operation to stop early. */
  int32_t (*cancelled)(void* context);
  /* Trusted wall clock, microseconds since the Unix epoch, UTC. */
  int64_t (*now_unix_micros)(void* context);
} ctx_host_api;

/* What the host offers. Passed to ctx_plugin_entry; the plugin must not keep the pointer. */
typedef struct ctx_host_negotiation {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor_min;
  uint32_t abi_minor_max;
} ctx_host_negotiation;

/* Plugin kinds; `ops` in the descriptor points at the table of that kind. */
#define CTX_KIND_INSTALLER 1u
#define CTX_KIND_VERIFIER 2u
#define CTX_KIND_HOST_ADAPTER 3u

/* A verifier's only acceptance. Any other verdict, or any non-OK code, is a rejection. */
#define CTX_VERDICT_ACCEPTED 0x43545841u /* "AXTC" */
#define CTX_VERDICT_REJECTED 0u

/* Human-decision verifier. Required: verify. */
typedef struct ctx_verifier_ops {
  uint32_t struct_size;
  /* Checks `proof` (from the assertion JSON) over `signing_bytes` with the instance's key
   * material; writes CTX_VERDICT_ACCEPTED or a rejection into *verdict. A malformed assertion is
   * a rejection with CTX_OK, or CTX_INVALID_ARGUMENT with a message. */
  ctx_code (*verify)(void* instance, ctx_bytes assertion_json, ctx_bytes signing_bytes,
                     uint32_t* verdict, ctx_error* err);
} ctx_verifier_ops;

/* Installer driver. Required: target_identity, install, activate, deactivate, reconcile.
 * Every request and reply is a JSON object; the request/reply fields are specified in
 * <ctx/conformance/conformance.hpp> and checked by the kit's installer suite.
 *
 * Material identity. Every "*material_identity_digest" an installer reports is the engine's
 * MaterialIdentity digest of the bytes it observed (received for install, active for activate
 * and reconcile), never a plain content hash:
 *   lower-case hex SHA-256 of the canonical JSON text of the object
 *     {"capability_id": <id>, "content_bytes": <byte count>, "content_sha256": <hex sha-256 of
 *      the bytes>, "kind": <the capability_id up to its first ':'>,
 *      "schema": "ctx.material-identity-v2"}
 *   canonical JSON: keys sorted by code point, no insignificant whitespace, integers in plain
 *   decimal, strings ASCII-only with every non-ASCII character \u-escaped (lower-case hex).
 *   Example: {"capability_id":"skill:pdf","content_bytes":5,"content_sha256":"<64 hex>",
 *   "kind":"skill","schema":"ctx.material-identity-v2"}.
 * Tree material (a directory: a skill's SKILL.md plus its resources) is named by its tree root:
 *   manifest = canonical JSON {"files": [{"bytes": <n>, "path": <relative path>, "sha256": <hex
 *     sha-256 of the file>}, ...], "schema": "ctx.skill-tree-v1"}, one entry per regular file,
 *     sorted bytewise by path; paths '/'-separated of 1..8 components [A-Za-z0-9_][A-Za-z0-9._-]
 *     {0,127} (no symlinks, no hidden names); a top-level "SKILL.md" is required;
 *   root = canonical JSON {"bytes": <the entries' byte counts summed>, "files": <entry count>,
 *     "manifest_sha256": <hex sha-256 of the manifest text>, "schema": "ctx.skill-tree-root-v1"},
 *     at most 178 bytes; "content_sha256" = sha-256 of the root text, "content_bytes" its length.
 *   An install sends the manifest text ("manifest") with "source": {"directory"}; it is applied
 *   only when every file read equals its entry, nothing unlisted is there and the manifest's root
 *   hashes to content_sha256; replies report the root's MaterialIdentity digest.
 *   ctx/sdk/skill_tree.hpp (header-only C++) spells both texts; host and in-tree installer use it.
 * A skill that is one top-level SKILL.md of at most 6000 bytes keeps the plain form: content_sha256
 * and content_bytes of the SKILL.md bytes themselves; ctx sends any other skill as tree material.
 * The engine records an activation as applied only when the reported digest equals the
 * authorised one; anything else is a failed or indeterminate observation. */
typedef struct ctx_installer_ops {
  uint32_t struct_size;
  /* Writes {"device","inode","owner","mode","path"} of the install root into `out`. */
  ctx_code (*target_identity)(void* instance, ctx_sink* out, ctx_error* err);
  /* Installs the material in `request`; writes {"outcome": "applied"|"failed"|"indeterminate",
   * "observed_material_identity_digest", "verification_digest", ...} into `out`. */
  ctx_code (*install)(void* instance, ctx_bytes request_json, ctx_sink* out, ctx_error* err);
  /* Activates the installed material {"capability_id", "content_sha256", ...}; writes {"outcome",
   * "observed_material_identity_digest" and "verification_digest" when applied, ...}. */
  ctx_code (*activate)(void* instance, ctx_bytes request_json, ctx_sink* out, ctx_error* err);
  ctx_code (*deactivate)(void* instance, ctx_bytes request_json, ctx_sink* out, ctx_error* err);
  /* Reports what is on disk now for the capabilities in `request`, for crash recovery; an active
   * entry carries "active_material_identity_digest" and "verification_digest". */
  ctx_code (*reconcile)(void* instance, ctx_bytes request_json, ctx_sink* out, ctx_error* err);
  /* ABI minor 1; optional (NULL, or past struct_size: absent). Installs tree material like
   * install's "source": {"directory"} form, except that the request has no "source" and the bytes
   * of every file its "manifest" lists are read from `bodies` (each path once, streamed, verified
   * against its manifest entry as it arrives and capped at the entry's size). Same reply as
   * install. A host whose installer lacks it stages the tree in a private directory and calls
   * install with that directory as the source. */
  ctx_code (*install_from_source)(void* instance, ctx_bytes request_json,
                                  const ctx_body_source* bodies, ctx_sink* out, ctx_error* err);
} ctx_installer_ops;

/* What a hook event means to ctx, whatever the host calls it: parse_hook's "kind". The host's
 * own name goes in "event", which ctx never reads and hands back in render_reply's request. */
#define CTX_HOOK_KIND_IGNORED "ignored"             /* an event ctx does nothing for */
#define CTX_HOOK_KIND_SESSION_START "session_start" /* a session starts or resumes */
#define CTX_HOOK_KIND_PROMPT "prompt"               /* the user submitted a prompt */
#define CTX_HOOK_KIND_TOOL_USE "tool_use"           /* before or after a tool call */
#define CTX_HOOK_KIND_TURN_END "turn_end"           /* the agent or a sub-agent ended its turn */
#define CTX_HOOK_KIND_COMPACT "compact"             /* the host compacts its context */
#define CTX_HOOK_KIND_SESSION_END "session_end"     /* the session ends */

/* Host adapter (Claude Code, Codex, generic). Required: parse_hook, render_reply. */
typedef struct ctx_host_adapter_ops {
  uint32_t struct_size;
  /* Hook payload JSON -> {"kind": CTX_HOOK_KIND_*, "event": the host's name, "scope":{...},
   * "signals":[...], "work_ref":{"id"?}}. */
  ctx_code (*parse_hook)(void* instance, ctx_bytes payload_json, ctx_sink* out, ctx_error* err);
  /* {"event"?: parse_hook's "event", "actions":[...], "challenge"?, ...} -> the host's native
   * reply JSON. */
  ctx_code (*render_reply)(void* instance, ctx_bytes actions_json, ctx_sink* out,
                           ctx_error* err);
  /* Optional: {"skills": "<dir>", ...} where the host looks for installed capabilities. */
  ctx_code (*install_locations)(void* instance, ctx_sink* out, ctx_error* err);
} ctx_host_adapter_ops;

/* The static description a plugin returns from ctx_plugin_entry. */
typedef struct ctx_plugin_descriptor {
  uint32_t abi_major;          /* abi_major and struct_size come first, forever */
  uint32_t struct_size;        /* the host reads no field past it */
  uint32_t abi_minor_required; /* must be <= the host's maximum minor */
  uint32_t abi_minor_built;    /* the CTX_ABI_MINOR the plugin was compiled against */
  uint32_t kind;               /* CTX_KIND_* */
  const char* id;              /* static; token [a-z0-9][a-z0-9._-]{0,63}; journaled */
  const char* version;         /* static; semantic version MAJOR.MINOR.PATCH */
  /* Creates an instance from `config` (JSON, may be empty); `host` outlives the instance.
   * On failure `*instance` stays NULL. */
  ctx_code (*create)(const ctx_host_api* host, ctx_bytes config, void** instance,
                     ctx_error* err);
  /* Destroys an instance from `create`; the host never passes NULL. */
  ctx_code (*destroy)(void* instance, ctx_error* err);
  const void* ops; /* ctx_installer_ops / ctx_verifier_ops / ctx_host_adapter_ops by kind */
} ctx_plugin_descriptor;

/* The one exported symbol. Returns a static descriptor, never NULL; no side effects. `host` is
 * never NULL and is borrowed for the call. */
typedef const ctx_plugin_descriptor* (*ctx_plugin_entry_fn)(const ctx_host_negotiation* host);
#define CTX_PLUGIN_ENTRY_SYMBOL "ctx_plugin_entry"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTX_ABI_PLUGIN_ABI_H_ */
