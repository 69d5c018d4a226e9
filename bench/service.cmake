# ctx_bench_service: ManagedQueryService prepare / exact retry / set_desired vs one raw SQLite
# insert+commit on the same disk at the same synchronous level; two-process contention.
add_executable(ctx_bench_service ${CMAKE_CURRENT_LIST_DIR}/service.cpp)
target_link_libraries(ctx_bench_service PRIVATE ctx::runtime ctx::app SQLite::SQLite3 benchmark::benchmark
                                                ctx::warnings)
target_include_directories(ctx_bench_service PRIVATE ${PROJECT_SOURCE_DIR})
