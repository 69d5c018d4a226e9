# ctx_bench_hook: one `hook` JSON-RPC round trip through a real `ctx serve` child at 1 and 8
# clients vs a raw Unix-socket echo of the same bytes in the same run; p50/p99 ratios and idle
# server RSS.
add_executable(ctx_bench_hook ${CMAKE_CURRENT_LIST_DIR}/hook.cpp)
target_link_libraries(ctx_bench_hook PRIVATE ctx::server benchmark::benchmark Threads::Threads
  ctx::warnings)
target_compile_definitions(ctx_bench_hook PRIVATE CTX_BINARY="$<TARGET_FILE:ctx>"
  CTX_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(ctx_bench_hook ctx)
