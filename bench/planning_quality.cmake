# ctx_bench_planning_quality: what ctx's hook shows for 212 labelled prompts over a 410-entry catalog
# of public skills and agents (bench/data), against SQLite FTS5 bm25() top 3 in the same run.
add_executable(ctx_bench_planning_quality ${CMAKE_CURRENT_LIST_DIR}/planning_quality.cpp)
target_link_libraries(ctx_bench_planning_quality PRIVATE ctx::app benchmark::benchmark
  SQLite::SQLite3 ctx::warnings)
target_compile_definitions(ctx_bench_planning_quality PRIVATE CTX_BINARY="$<TARGET_FILE:ctx>"
  CTX_BENCH_DATA="${CMAKE_CURRENT_LIST_DIR}/data")
add_dependencies(ctx_bench_planning_quality ctx)
# `ctx init` pins the bundled plugins it finds in the build tree: the host adapter the hooks run
# through and the installers that make catalog entries installable must be built first.
foreach(plugin claude_code_host skill_installer agent_installer mcp_installer ed25519)
  if(TARGET ctx_plugin_${plugin})
    add_dependencies(ctx_bench_planning_quality ctx_plugin_${plugin})
  endif()
endforeach()
