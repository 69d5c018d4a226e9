# ctx_fuzz_elf: libFuzzer target over the plugin loader's ELF reader. Only with -DCTX_FUZZ=ON and
# a clang compiler; not built by default and not run in CI. Run e.g.
#   build-fuzz/bench/ctx_fuzz_elf -runs=1000000 corpus/ build/tests/fixtures/plugins/
option(CTX_FUZZ "Build the libFuzzer targets (clang only)" OFF)
if(CTX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CTX_FUZZ needs clang (-fsanitize=fuzzer)")
  endif()
  set(fuzz_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  add_executable(ctx_fuzz_elf ${CMAKE_CURRENT_LIST_DIR}/fuzz_elf.cpp
    ${PROJECT_SOURCE_DIR}/host/plugins/detail/elf_reader.cpp
    ${PROJECT_SOURCE_DIR}/host/plugins/errors.cpp)
  target_include_directories(ctx_fuzz_elf PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(ctx_fuzz_elf PRIVATE ${fuzz_flags} -g -O1)
  target_link_options(ctx_fuzz_elf PRIVATE ${fuzz_flags})
  target_link_libraries(ctx_fuzz_elf PRIVATE ctx::core)
endif()
