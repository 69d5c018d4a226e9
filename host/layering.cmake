# The layering rules of host/ (issue 33 item 1), checked on every build (target ctx_layering,
# built by default) and by ctest (host_layering):
#   1. host/cli and host/server include no host/runtime, host/engine, host/store or host/plugins
#      header, nor the SDK's loader (ctx/loader/): they reach the layers below through host/app
#      only (and host/core, the ground).
#   2. Only host/plugins/ and host/app/installation.cpp name the plugin loader or an Abi*
#      adapter (PluginLoader, Abi[A-Z]...) in a .cpp: one place loads plugins and makes ports.
#   3. Only host/app/state_layout.{hpp,cpp} name a file or folder of the state directory in
#      host/app, host/cli and host/server: no other source there spells one of its file names
#      (the quoted names state_layout gives a constant or joins onto a path, those with a '.' or
#      a '-' in them or in capitals: "plugins.lock.json", "install-policy", "CURRENT", ...), and
#      none joins a quoted name onto the state dir by hand (state / "x", state_dir_ / "x",
#      service_dir / "x"): they use StatePaths or state_layout's constants.
#   4. One home per low-level concern (issue 33 item 5): no file of host/, plugins/ or sdk/ outside
#      sdk/support defines its own fd-owning class, directory fsync, token or digest predicate,
#      or strict JSON reader (nlohmann's sax_parse or parser callback); they use ctx/support
#      (unique_fd.hpp, fs.hpp, text.hpp, strict_json.hpp); nor calls OpenSSL for a SHA-256 stream,
#      an HMAC, a constant-time comparison or cleansing (digest.hpp, ctx::support_digest).
#   5. A host's own event names stay inside its adapter (issue 33 item 3): no file of host/ quotes
#      one ("UserPromptSubmit", "PreToolUse", ...) except host/app/hook/hooks_config.{hpp,cpp},
#      which writes the hosts' own hook configuration, and host/cli/demo_command.cpp, which writes
#      Claude Code's payloads for the demo; the rest sees engine::HookEvent.
#   6. sdk/ never includes a host/ header (issue 33 item 6): the SDK, its loader and the
#      conformance kit stand on their own; the host depends on them, never the reverse.
# Usage: cmake -DCTX_SOURCE_DIR=<repo> [-DSTAMP=<file>] -P host/layering.cmake
# (ctx_runtime not linking the loader, ctx::plugins, is checked at configure time in
# host/CMakeLists.txt.)
if(NOT CTX_SOURCE_DIR)
  message(FATAL_ERROR "layering.cmake: CTX_SOURCE_DIR is not set")
endif()
set(violations "")

file(GLOB_RECURSE front_sources "${CTX_SOURCE_DIR}/host/cli/*.cpp" "${CTX_SOURCE_DIR}/host/cli/*.hpp"
  "${CTX_SOURCE_DIR}/host/server/*.cpp" "${CTX_SOURCE_DIR}/host/server/*.hpp")
foreach(file IN LISTS front_sources)
  file(STRINGS "${file}" lines REGEX
    "^[ \t]*#[ \t]*include[ \t]*[<\"](host/(runtime|engine|store|plugins)|ctx/loader)/")
  foreach(line IN LISTS lines)
    file(RELATIVE_PATH rel "${CTX_SOURCE_DIR}" "${file}")
    string(APPEND violations "  ${rel}: ${line} (include host/app instead)\n")
  endforeach()
endforeach()

file(GLOB_RECURSE host_sources "${CTX_SOURCE_DIR}/host/*.cpp")
foreach(file IN LISTS host_sources)
  file(RELATIVE_PATH rel "${CTX_SOURCE_DIR}" "${file}")
  if(rel MATCHES "^host/plugins/" OR rel STREQUAL "host/app/installation.cpp")
    continue()
  endif()
  file(STRINGS "${file}" lines REGEX "PluginLoader|Abi[A-Z]")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(APPEND violations "  ${rel}: ${line} (only host/app/installation.cpp loads plugins)\n")
  endforeach()
endforeach()

set(layout_hpp "${CTX_SOURCE_DIR}/host/app/state_layout.hpp")
set(layout_cpp "${CTX_SOURCE_DIR}/host/app/state_layout.cpp")
file(STRINGS "${layout_hpp}" layout_lines REGEX "= \"[^\"]+\"")
file(STRINGS "${layout_cpp}" layout_joins REGEX "/ \"[^\"]+\"")
list(APPEND layout_lines ${layout_joins})
set(state_names "")
foreach(line IN LISTS layout_lines)
  string(REGEX MATCHALL "\"[^\"]+\"" quoted "${line}")
  foreach(name IN LISTS quoted)
    if(name MATCHES "[.-]" OR name MATCHES "^\"[A-Z]+\"$")
      list(APPEND state_names "${name}")
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES state_names)
list(FIND state_names "\"plugins.lock.json\"" found)
if(found EQUAL -1)
  message(FATAL_ERROR "layering.cmake: the state file names were not found in ${layout_hpp}")
endif()
file(GLOB_RECURSE layout_scope "${CTX_SOURCE_DIR}/host/app/*.cpp" "${CTX_SOURCE_DIR}/host/app/*.hpp"
  "${CTX_SOURCE_DIR}/host/cli/*.cpp" "${CTX_SOURCE_DIR}/host/cli/*.hpp"
  "${CTX_SOURCE_DIR}/host/server/*.cpp" "${CTX_SOURCE_DIR}/host/server/*.hpp")
foreach(file IN LISTS layout_scope)
  if(file STREQUAL layout_hpp OR file STREQUAL layout_cpp)
    continue()
  endif()
  file(RELATIVE_PATH rel "${CTX_SOURCE_DIR}" "${file}")
  file(READ "${file}" text)
  foreach(name IN LISTS state_names)
    string(FIND "${text}" "${name}" at)
    if(NOT at EQUAL -1)
      string(APPEND violations "  ${rel}: names the state file ${name} (use host/app/state_layout.hpp)\n")
    endif()
  endforeach()
  file(STRINGS "${file}" joins
    REGEX "(^|[^A-Za-z0-9_])(state|state_dir|state_dir_|service_dir)\\)? / \"")
  foreach(line IN LISTS joins)
    string(STRIP "${line}" line)
    string(APPEND violations "  ${rel}: ${line} (a state dir path: use StatePaths)\n")
  endforeach()
endforeach()

file(GLOB_RECURSE low_level_sources "${CTX_SOURCE_DIR}/host/*.?pp" "${CTX_SOURCE_DIR}/plugins/*.?pp"
  "${CTX_SOURCE_DIR}/sdk/*.?pp")
foreach(file IN LISTS low_level_sources)
  file(RELATIVE_PATH rel "${CTX_SOURCE_DIR}" "${file}")
  if(rel MATCHES "^sdk/support/")
    continue()
  endif()
  file(STRINGS "${file}" lines REGEX
    "^[ \t]*(class|struct)[ \t]+[A-Za-z]*(Fd|FileDescriptor)[ \t]*{|bool[ \t]+is_(token|sha256_hex)[ \t]*\\(std::string_view|(void|int|bool)[ \t]+fsync_dir(ectory)?[ \t]*\\(const|sax_parse|parse_event_t")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(APPEND violations "  ${rel}: ${line} (one home: use ctx/support)\n")
  endforeach()
  # The OpenSSL helpers (SHA-256 streams, HMAC, constant-time comparison, cleansing): digest.hpp.
  file(STRINGS "${file}" lines REGEX
    "(EVP_MD_fetch|EVP_MAC_[a-z_]+|EVP_Q_mac|EVP_DigestInit_ex|CRYPTO_memcmp|OPENSSL_cleanse)[ \t]*\\(")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(APPEND violations "  ${rel}: ${line} (one home: use ctx/support/digest.hpp)\n")
  endforeach()
endforeach()

file(GLOB_RECURSE event_scope "${CTX_SOURCE_DIR}/host/*.?pp")
foreach(file IN LISTS event_scope)
  file(RELATIVE_PATH rel "${CTX_SOURCE_DIR}" "${file}")
  if(rel MATCHES "^host/app/hook/hooks_config\\.[ch]pp$" OR rel STREQUAL "host/cli/demo_command.cpp")
    continue()
  endif()
  file(STRINGS "${file}" lines REGEX
    "\"(SessionStart|UserPromptSubmit|PreToolUse|PostToolUse|Stop|SubagentStop|PreCompact|PostCompact|SessionEnd)\"")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(APPEND violations "  ${rel}: ${line} (a host's event name: use engine::HookEvent)\n")
  endforeach()
endforeach()

file(GLOB_RECURSE sdk_sources "${CTX_SOURCE_DIR}/sdk/*.?pp" "${CTX_SOURCE_DIR}/sdk/*.h")
foreach(file IN LISTS sdk_sources)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]host/")
  foreach(line IN LISTS lines)
    file(RELATIVE_PATH rel "${CTX_SOURCE_DIR}" "${file}")
    string(APPEND violations "  ${rel}: ${line} (sdk/ never includes host/)\n")
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "host layering broken (issue 33 item 1):\n${violations}")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
