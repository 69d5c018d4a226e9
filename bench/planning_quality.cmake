# ctx_bench_planning_quality: what ctx's hook shows for 212 labelled prompts over a 410-entry catalog
# of public skills and agents (bench/data), against SQLite FTS5 bm25() top 3 in the same run.
add_executable(ctx_bench_planning_quality ${CMAKE_CURRENT_LIST_DIR}/planning_quality.cpp)
target_link_libraries(ctx_bench_planning_quality PRIVATE ctx::app benchmark::benchmark
  SQLite::SQLite3 ctx::warnings)
target_compile_definitions(ctx_bench_planning_quality PRIVATE CTX_BINARY="$<TARGET_FILE:ctx>"
  CTX_BENCH_DATA="${CMAKE_CURRENT_LIST_DIR}/data")
add_dependencies(ctx_bench_planning_quality ctx)
