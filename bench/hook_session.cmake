# ctx_bench_hook_session: 50 hooks of one session, a fresh `ctx hook` process each, the first
# starting `ctx serve` (the default) and the rest going through it, vs `ctx --version` in the
# same run; and the same session with every hook in process (--no-autoserve).
add_executable(ctx_bench_hook_session ${CMAKE_CURRENT_LIST_DIR}/hook_session.cpp)
target_link_libraries(ctx_bench_hook_session PRIVATE benchmark::benchmark ctx::warnings)
target_compile_definitions(ctx_bench_hook_session PRIVATE CTX_BINARY="$<TARGET_FILE:ctx>"
  CTX_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(ctx_bench_hook_session ctx)
