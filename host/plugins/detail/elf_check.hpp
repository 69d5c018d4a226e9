// Pre-load inspection of a plugin file: reads the ELF headers and the dynamic symbol table from a
// file descriptor without loading (no code of the file runs). Bounds-checked against the file
// size; pure reads (pread), so the descriptor's offset is untouched. Thread-safe.
#ifndef CTX_HOST_PLUGINS_DETAIL_ELF_CHECK_HPP_
#define CTX_HOST_PLUGINS_DETAIL_ELF_CHECK_HPP_

#include <cstdint>
#include <string>
#include <string_view>

namespace ctx::plugins::detail {

// Requires `fd` (of `size` bytes) to be an ELF shared object for this machine whose dynamic
// symbol table defines the exported function `symbol`. `plugin` names the file in messages.
// Errors: PluginLoadFailed ("not an elf shared object ...") when the headers are wrong;
// MissingEntrySymbol ("entry symbol <symbol> ...") when the symbol is absent or not exported.
void require_exported_function(int fd, std::uint64_t size, std::string_view symbol,
                               const std::string& plugin);

}  // namespace ctx::plugins::detail

#endif  // CTX_HOST_PLUGINS_DETAIL_ELF_CHECK_HPP_
