# ctx_bench_journal: durable appends through SqliteJournalStore vs raw SQLite insert+commit.
add_executable(ctx_bench_journal ${CMAKE_CURRENT_LIST_DIR}/journal.cpp)
target_link_libraries(ctx_bench_journal PRIVATE ctx::store benchmark::benchmark ctx::warnings)
