# ctx_bench_catalog_scale: catalog import time at N/10 and N entries, and plan p50 at 1,000 and N
# entries (issue 34 item 6; N = $CTX_CATALOG_SCALE, default 80000, the issue's figures; the
# smoke test sets 2000).
add_executable(ctx_bench_catalog_scale ${CMAKE_CURRENT_LIST_DIR}/catalog_scale.cpp)
target_link_libraries(ctx_bench_catalog_scale PRIVATE ctx::app benchmark::benchmark ctx::warnings)
target_compile_definitions(ctx_bench_catalog_scale PRIVATE
  CTX_BENCH_DATA="${CMAKE_CURRENT_LIST_DIR}/data")
