#include "host/plugins/detail/elf_check.hpp"

#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "host/plugins/errors.hpp"

namespace ctx::plugins::detail {
namespace {

#if defined(__x86_64__)
constexpr std::uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr std::uint16_t kHostMachine = EM_AARCH64;
#else
#error "ctx plugin loader: add this machine's ELF e_machine"
#endif

// Reads exactly `size` bytes at `offset`, or returns false (short file or I/O error).
bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

// True when [offset, offset + length) lies inside a file of `file_size` bytes.
bool in_file(std::uint64_t offset, std::uint64_t length, std::uint64_t file_size) {
  return offset <= file_size && length <= file_size - offset;
}

}  // namespace

void require_exported_function(int fd, std::uint64_t size, std::string_view symbol,
                               const std::string& plugin) {
  const auto not_elf = [&](const char* why) {
    return PluginLoadFailed("plugin " + plugin + " is not an elf shared object for this host: " +
                            why);
  };
  Elf64_Ehdr header{};
  if (size < sizeof header || !read_at(fd, &header, sizeof header, 0)) throw not_elf("too short");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) throw not_elf("bad magic");
  if (header.e_ident[EI_CLASS] != ELFCLASS64) throw not_elf("not 64-bit");
  if (header.e_ident[EI_DATA] != ELFDATA2LSB) throw not_elf("not little-endian");
  if (header.e_type != ET_DYN) throw not_elf("not a shared object (ET_DYN)");
  if (header.e_machine != kHostMachine) throw not_elf("built for another machine");
  if (header.e_shentsize != sizeof(Elf64_Shdr) ||
      !in_file(header.e_shoff, std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr), size)) {
    throw not_elf("bad section header table");
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (!sections.empty() &&
      !read_at(fd, sections.data(), sections.size() * sizeof(Elf64_Shdr), header.e_shoff)) {
    throw not_elf("unreadable section headers");
  }

  const auto missing = [&](const char* why) {
    return MissingEntrySymbol("plugin " + plugin + " does not export the entry symbol " +
                              std::string(symbol) + " (" + why + ")");
  };
  for (const Elf64_Shdr& dynsym : sections) {
    if (dynsym.sh_type != SHT_DYNSYM) continue;
    if (dynsym.sh_link >= sections.size()) throw not_elf("bad dynamic string table link");
    const Elf64_Shdr& strtab = sections[dynsym.sh_link];
    if (!in_file(dynsym.sh_offset, dynsym.sh_size, size) ||
        !in_file(strtab.sh_offset, strtab.sh_size, size)) {
      throw not_elf("dynamic symbol table outside the file");
    }
    std::vector<Elf64_Sym> symbols(dynsym.sh_size / sizeof(Elf64_Sym));
    std::vector<char> names(strtab.sh_size);
    if ((!symbols.empty() &&
         !read_at(fd, symbols.data(), symbols.size() * sizeof(Elf64_Sym), dynsym.sh_offset)) ||
        (!names.empty() && !read_at(fd, names.data(), names.size(), strtab.sh_offset))) {
      throw not_elf("unreadable dynamic symbol table");
    }
    for (const Elf64_Sym& sym : symbols) {
      if (sym.st_name >= names.size()) continue;
      const char* name = names.data() + sym.st_name;
      const std::size_t max_len = names.size() - sym.st_name;
      if (::strnlen(name, max_len) != symbol.size() ||
          std::memcmp(name, symbol.data(), symbol.size()) != 0) {
        continue;
      }
      const unsigned binding = ELF64_ST_BIND(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF) throw missing("only referenced, not defined");
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC) throw missing("not a function");
      if ((binding != STB_GLOBAL && binding != STB_WEAK) ||
          ELF64_ST_VISIBILITY(sym.st_other) != STV_DEFAULT) {
        throw missing("not exported");
      }
      return;
    }
    throw missing("absent from the dynamic symbol table");
  }
  throw missing("no dynamic symbol table");
}

}  // namespace ctx::plugins::detail
