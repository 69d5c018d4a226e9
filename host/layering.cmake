# The layering rules of host/ (issue 33 item 1), checked on every build (target ctx_layering,
# built by default) and by ctest (host_layering):
#   1. host/cli and host/server include no host/runtime header: they reach the runtime through
#      host/app only.
#   2. Only host/plugins/ and host/app/installation.cpp name the plugin loader or an Abi*
#      adapter (PluginLoader, Abi[A-Z]...) in a .cpp: one place loads plugins and makes ports.
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
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]host/runtime/")
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

if(violations)
  message(FATAL_ERROR "host layering broken (issue 33 item 1):\n${violations}")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
