# ctx_bench_hook_cold: in-process `ctx hook` cold start (a fresh process per hook, the embedded
# default) vs `ctx --version` cold start, in the same run. Separate from ctx_bench_hook (the
# server round trips).
add_executable(ctx_bench_hook_cold ${CMAKE_CURRENT_LIST_DIR}/hook_cold.cpp)
target_link_libraries(ctx_bench_hook_cold PRIVATE benchmark::benchmark ctx::warnings)
target_compile_definitions(ctx_bench_hook_cold PRIVATE CTX_BINARY="$<TARGET_FILE:ctx>"
  CTX_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(ctx_bench_hook_cold ctx)
