# ctx_bench_plugin_load: pinned load (memfd copy, seal, hash, compare, ELF checks, dlopen of
# /proc/self/fd/N, negotiate, validate) of a 1 MiB and a 16 MiB plugin, against raw OpenSSL SHA-256 of the same
# bytes plus one plain dlopen, in the same run. The padded plugins are the valid verifier fixture
# with a large read-only array.
foreach(mib 1 16)
  set(padded ctx_plugin_bench_padded_${mib}m)
  ctx_add_plugin(bench_padded_${mib}m
    SOURCES ${PROJECT_SOURCE_DIR}/tests/fixtures/plugins/valid_verifier.cpp)
  math(EXPR pad_bytes "${mib} * 1048576")
  target_include_directories(${padded} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(${padded} PRIVATE
    CTX_FIXTURE_PAD_BYTES=${pad_bytes} CTX_FIXTURE_ID="bench-padded-${mib}m")
endforeach()

add_executable(ctx_bench_plugin_load ${CMAKE_CURRENT_LIST_DIR}/plugin_load.cpp)
target_link_libraries(ctx_bench_plugin_load PRIVATE
  ctx::plugins ctx::cli_lib ctx::core benchmark::benchmark OpenSSL::Crypto ${CMAKE_DL_LIBS} ctx::warnings)
target_compile_definitions(ctx_bench_plugin_load PRIVATE
  CTX_BENCH_PLUGIN_1M="$<TARGET_FILE:ctx_plugin_bench_padded_1m>"
  CTX_BENCH_PLUGIN_16M="$<TARGET_FILE:ctx_plugin_bench_padded_16m>")
add_dependencies(ctx_bench_plugin_load ctx_plugin_bench_padded_1m ctx_plugin_bench_padded_16m)
