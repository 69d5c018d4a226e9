# ctx_bench_mcp_activation: an MCP server activation + deactivation through the mcp-installer core
# (JSON and TOML host files) against raw atomic rewrites of the same file bytes.
if(TARGET ctx_mcp_installer_core)
  add_executable(ctx_bench_mcp_activation ${CMAKE_CURRENT_LIST_DIR}/mcp_activation.cpp)
  target_include_directories(ctx_bench_mcp_activation PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(ctx_bench_mcp_activation PRIVATE ctx::mcp_installer_core
    benchmark::benchmark ctx::warnings)
endif()
