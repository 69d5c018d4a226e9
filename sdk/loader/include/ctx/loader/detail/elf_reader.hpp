// Reads what the dynamic loader will see in a plugin file, from its bytes, without loading it:
// the program headers, PT_DYNAMIC (needed sonames, rpath/runpath, filters), the entry symbol
// looked up through DT_GNU_HASH (or DT_HASH) as ld.so looks it up, and the ctx identity note.
// Every offset, size and index is bounds-checked against the bytes; malformed input is a
// MalformedElf error, never a crash. Pure function over a byte view; thread-safe.
#ifndef CTX_LOADER_DETAIL_ELF_READER_HPP_
#define CTX_LOADER_DETAIL_ELF_READER_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::plugins::detail {

// Note name and type of the identity note in section .note.ctx.plugin.
inline constexpr std::string_view kIdentityNoteName = "ctx";
inline constexpr std::uint32_t kIdentityNoteType = 1;
inline constexpr std::string_view kIdentityNoteSection = ".note.ctx.plugin";

struct ElfPluginView {
  std::vector<std::string> needed;   // DT_NEEDED in order
  std::vector<std::string> rpath;    // DT_RPATH values (refused by the loader)
  std::vector<std::string> runpath;  // DT_RUNPATH values (refused by the loader)
  std::vector<std::string> filters;  // DT_FILTER / DT_AUXILIARY / DT_AUDIT / DT_DEPAUDIT
  bool entry_found = false;          // symbol defined, exported, a plain function
  std::string entry_problem;         // why not, when !entry_found
  // Descriptor of the one "ctx" type-1 note (from a PT_NOTE segment, else from the section
  // named .note.ctx.plugin); nullopt when there is none.
  std::optional<std::string> identity_note;
};

// Parses `bytes` as an ELF64 shared object for this machine and looks up `symbol`.
// Errors: MalformedElf with the reason (no file name; callers prefix it).
ElfPluginView read_elf_plugin(std::span<const std::byte> bytes, std::string_view symbol);

// Reads only what decides which further files the dynamic loader maps for `bytes` as a
// dependency or as the main program: needed, rpath, runpath and filters (entry_found stays
// false, identity_note empty). Accepts ET_DYN and ET_EXEC of this machine, with or without
// PT_INTERP; a file without PT_DYNAMIC needs nothing. Errors: MalformedElf.
ElfPluginView read_elf_dependency(std::span<const std::byte> bytes);

}  // namespace ctx::plugins::detail

#endif  // CTX_LOADER_DETAIL_ELF_READER_HPP_
