# ctx_add_plugin(<name> SOURCES <src>... [LIBRARIES <lib>...])
# Builds MODULE ctx_plugin_<name>: hidden visibility, no undefined symbols, links ctx::plugin_sdk.
# The only exported symbol is ctx_plugin_entry: a linker version script makes every other symbol
# local, including those of static libraries linked in through LIBRARIES. Every target made here
# is appended to the global property CTX_PLUGIN_TARGETS (the SDK's note test checks them all).
# Outside Debug builds the module is linked with --strip-debug: the host hashes and copies every
# pinned byte on each load, and debug sections are most of a plugin's size (8 MB -> 0.35 MB).
function(ctx_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  set(target ctx_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${target}
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  set(exports ${CMAKE_CURRENT_BINARY_DIR}/${target}.exports)
  file(CONFIGURE OUTPUT ${exports} CONTENT "{\n  global: ctx_plugin_entry;\n  local: *;\n};\n")
  target_link_options(${target} PRIVATE LINKER:--no-undefined LINKER:--version-script=${exports})
  if(NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
    target_link_options(${target} PRIVATE LINKER:--strip-debug)
  endif()
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${exports})
  target_link_libraries(${target} PRIVATE ctx::plugin_sdk ${ARG_LIBRARIES})
  set_property(GLOBAL APPEND PROPERTY CTX_PLUGIN_TARGETS ${target})
endfunction()
