// libFuzzer target over the loader's ELF reader (detail/elf_reader.hpp), plugin and dependency
// views: any input must give a view or a MalformedElf, never a crash, hang, sanitizer report or
// another exception. Seed it with real plugins (e.g. build/tests/fixtures/plugins/*.so) and system
// libraries. Built only with -DCTX_FUZZ=ON and clang (-fsanitize=fuzzer,address,undefined); a
// bench job, not CI.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctx/loader/detail/elf_reader.hpp>
#include <ctx/loader/errors.hpp>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto view = ctx::plugins::detail::read_elf_plugin(std::as_bytes(std::span(data, size)),
                                                            "ctx_plugin_entry");
    // Touch what was read so the sanitizers see every byte the reader produced.
    std::size_t total = view.entry_problem.size();
    for (const auto& name : view.needed) total += name.size();
    if (view.identity_note) total += view.identity_note->size();
    if (total == static_cast<std::size_t>(-1)) std::abort();
  } catch (const ctx::plugins::MalformedElf&) {
  }
  try {  // the dependency view of the same bytes
    const auto view =
        ctx::plugins::detail::read_elf_dependency(std::as_bytes(std::span(data, size)));
    std::size_t total = 0;
    for (const auto& name : view.needed) total += name.size();
    for (const auto& path : view.runpath) total += path.size();
    if (total == static_cast<std::size_t>(-1)) std::abort();
  } catch (const ctx::plugins::MalformedElf&) {
  }
  return 0;
}
