# ctx_bench_planner: plan latency over graph stores of 100, 10 000 and 100 000 nodes.
add_executable(ctx_bench_planner ${CMAKE_CURRENT_LIST_DIR}/planner.cpp)
target_link_libraries(ctx_bench_planner PRIVATE ctx::store benchmark::benchmark ctx::warnings)
