#include <elf.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <ctx/loader/detail/elf_reader.hpp>
#include <ctx/loader/errors.hpp>
#include <limits>
#include <type_traits>

namespace ctx::plugins::detail {
namespace {

#if defined(__x86_64__)
constexpr std::uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr std::uint16_t kHostMachine = EM_AARCH64;
#else
#error "ctx plugin loader: add this machine's ELF e_machine"
#endif

static_assert(std::endian::native == std::endian::little, "the ELF reader assumes little-endian");

// Upper bounds that keep every loop and allocation small whatever the input claims.
constexpr std::uint64_t kMaxSegmentMemory = 1ull << 32;
constexpr std::size_t kMaxDynamicEntries = 1u << 16;
constexpr std::size_t kMaxNeeded = 256;
constexpr std::uint64_t kMaxChainSteps = 1u << 20;

[[noreturn]] void bad(const std::string& why) { throw MalformedElf(why); }

// a + b, or a MalformedElf when it overflows.
std::uint64_t add(std::uint64_t a, std::uint64_t b, const char* what) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) bad(std::string(what) + " overflows");
  return a + b;
}

class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  std::uint64_t size() const { return bytes_.size(); }
  bool in_file(std::uint64_t offset, std::uint64_t length) const {
    return offset <= bytes_.size() && length <= bytes_.size() - offset;
  }
  // A T copied from `offset` (no alignment assumed).
  template <typename T>
  T at(std::uint64_t offset, const char* what) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!in_file(offset, sizeof(T))) bad(std::string(what) + " lies outside the file");
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  std::string_view text(std::uint64_t offset, std::uint64_t length) const {
    return {reinterpret_cast<const char*>(bytes_.data()) + offset,
            static_cast<std::size_t>(length)};
  }

 private:
  std::span<const std::byte> bytes_;
};

// The file-backed part of the PT_LOAD segments: how ld.so's view (virtual addresses) maps to
// bytes of the file.
class AddressMap {
 public:
  void add(const Elf64_Phdr& load) { loads_.push_back(load); }
  bool empty() const { return loads_.empty(); }
  const std::vector<Elf64_Phdr>& loads() const { return loads_; }

  // File offset of [vaddr, vaddr + length) when it lies in the file-backed part of one PT_LOAD;
  // also returns how many bytes of that segment's file part follow vaddr.
  std::optional<std::uint64_t> offset_of(std::uint64_t vaddr, std::uint64_t length,
                                         std::uint64_t* available = nullptr) const {
    for (const Elf64_Phdr& p : loads_) {
      if (vaddr < p.p_vaddr) continue;
      const std::uint64_t delta = vaddr - p.p_vaddr;
      if (delta >= p.p_filesz || length > p.p_filesz - delta) continue;
      if (available != nullptr) *available = p.p_filesz - delta;
      return p.p_offset + delta;
    }
    return std::nullopt;
  }
  bool in_memory(std::uint64_t vaddr) const {
    return std::any_of(loads_.begin(), loads_.end(), [&](const Elf64_Phdr& p) {
      return vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_memsz;
    });
  }

 private:
  std::vector<Elf64_Phdr> loads_;
};

bool is_power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::uint32_t gnu_hash(std::string_view name) {
  std::uint32_t h = 5381;
  for (const char c : name) h = h * 33 + static_cast<unsigned char>(c);
  return h;
}

std::uint32_t elf_hash(std::string_view name) {
  std::uint32_t h = 0;
  for (const char c : name) {
    h = (h << 4) + static_cast<unsigned char>(c);
    const std::uint32_t g = h & 0xf0000000u;
    if (g != 0) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

struct Dynamic {
  std::optional<std::uint64_t> strtab, strsz, symtab, syment, gnu_hash, sysv_hash;
  std::vector<std::uint64_t> needed, rpath, runpath, filters;
};

class Parser {
 public:
  // `symbol` empty: read as a dependency or the main program (see read_elf_dependency).
  Parser(std::span<const std::byte> bytes, std::string_view symbol)
      : file_(bytes), symbol_(symbol), dependency_(symbol.empty()) {}

  ElfPluginView run() {
    read_header();
    read_program_headers();
    if (!dynamic_) {
      if (dependency_) return std::move(view_);  // statically linked: needs nothing
      bad("no PT_DYNAMIC segment");
    }
    read_dynamic();
    resolve_strings();
    if (dependency_) return std::move(view_);
    find_entry();
    if (!view_.identity_note) read_note_sections();
    return std::move(view_);
  }

 private:
  void read_header() {
    if (file_.size() < sizeof(Elf64_Ehdr)) bad("shorter than an ELF header");
    header_ = file_.at<Elf64_Ehdr>(0, "ELF header");
    if (std::memcmp(header_.e_ident, ELFMAG, SELFMAG) != 0) bad("no ELF magic");
    if (header_.e_ident[EI_CLASS] != ELFCLASS64) bad("not a 64-bit ELF file");
    if (header_.e_ident[EI_DATA] != ELFDATA2LSB) bad("not little-endian");
    if (header_.e_ident[EI_VERSION] != EV_CURRENT || header_.e_version != EV_CURRENT) {
      bad("unknown ELF version");
    }
    if (header_.e_type != ET_DYN && !(dependency_ && header_.e_type == ET_EXEC)) {
      bad(dependency_ ? "not a shared object or executable" : "not a shared object (ET_DYN)");
    }
    if (header_.e_machine != kHostMachine) bad("built for another machine");
    if (header_.e_phentsize != sizeof(Elf64_Phdr)) bad("unexpected program header size");
    if (header_.e_phnum == 0 || header_.e_phnum == PN_XNUM) bad("bad program header count");
    if (!file_.in_file(header_.e_phoff, std::uint64_t{header_.e_phnum} * sizeof(Elf64_Phdr))) {
      bad("program header table lies outside the file");
    }
  }

  void read_program_headers() {
    std::uint64_t last_vaddr = 0;
    for (std::uint16_t i = 0; i < header_.e_phnum; ++i) {
      const auto p =
          file_.at<Elf64_Phdr>(header_.e_phoff + std::uint64_t{i} * sizeof(Elf64_Phdr), "phdr");
      const std::string where = "program header " + std::to_string(i);
      switch (p.p_type) {
        case PT_LOAD: {
          if (!file_.in_file(p.p_offset, p.p_filesz)) bad(where + ": PT_LOAD outside the file");
          if (p.p_memsz < p.p_filesz) bad(where + ": PT_LOAD memsz < filesz");
          if (p.p_memsz > kMaxSegmentMemory) bad(where + ": PT_LOAD memsz too large");
          add(p.p_vaddr, p.p_memsz, "PT_LOAD end address");
          if (p.p_align > 1) {
            if (!is_power_of_two(p.p_align)) bad(where + ": PT_LOAD alignment not a power of 2");
            if (p.p_vaddr % p.p_align != p.p_offset % p.p_align) {
              bad(where + ": PT_LOAD address and offset disagree modulo the alignment");
            }
          }
          if (!map_.empty() && p.p_vaddr < last_vaddr) bad(where + ": PT_LOAD out of order");
          last_vaddr = p.p_vaddr + p.p_memsz;
          map_.add(p);
          break;
        }
        case PT_DYNAMIC:
          if (dynamic_) bad(where + ": second PT_DYNAMIC");
          dynamic_ = p;
          break;
        case PT_NOTE:
          notes_.push_back(p);
          break;
        case PT_INTERP:
          if (!dependency_) bad(where + ": PT_INTERP (an executable, not a plugin)");
          break;
        default:
          break;
      }
    }
    if (map_.empty()) bad("no PT_LOAD segment");
    if (dependency_) return;
    for (const Elf64_Phdr& note : notes_) read_notes(note.p_offset, note.p_filesz, note.p_align);
  }

  // Scans one note area; records the ctx identity note.
  void read_notes(std::uint64_t offset, std::uint64_t size, std::uint64_t align) {
    if (!file_.in_file(offset, size)) bad("note segment lies outside the file");
    const std::uint64_t a = align == 8 ? 8 : 4;
    const auto pad = [a](std::uint64_t v) { return (v + a - 1) & ~(a - 1); };
    std::uint64_t pos = 0;
    while (size - pos >= sizeof(Elf64_Nhdr)) {
      const auto n = file_.at<Elf64_Nhdr>(offset + pos, "note header");
      pos += sizeof(Elf64_Nhdr);
      const std::uint64_t name_len = pad(n.n_namesz);
      if (name_len > size - pos) bad("note name runs past its segment");
      const std::string_view name = file_.text(offset + pos, n.n_namesz);
      pos += name_len;
      const std::uint64_t desc_len = pad(n.n_descsz);
      if (desc_len > size - pos) bad("note descriptor runs past its segment");
      const std::string_view desc = file_.text(offset + pos, n.n_descsz);
      pos += desc_len;
      if (n.n_namesz == kIdentityNoteName.size() + 1 && name.substr(0, 3) == kIdentityNoteName &&
          name[3] == '\0' && n.n_type == kIdentityNoteType) {
        if (view_.identity_note) bad("more than one ctx identity note");
        view_.identity_note = std::string(desc);
      }
    }
  }

  void read_dynamic() {
    const Elf64_Phdr& d = *dynamic_;
    std::uint64_t available = 0;
    const auto offset = map_.offset_of(d.p_vaddr, d.p_filesz, &available);
    if (!offset || !file_.in_file(d.p_offset, d.p_filesz) || d.p_filesz < sizeof(Elf64_Dyn)) {
      bad("PT_DYNAMIC is not inside the file part of a PT_LOAD");
    }
    if (*offset != d.p_offset) bad("PT_DYNAMIC address and offset disagree");
    const std::uint64_t count = d.p_filesz / sizeof(Elf64_Dyn);
    bool terminated = false;
    for (std::uint64_t i = 0; i < count && i < kMaxDynamicEntries; ++i) {
      const auto e = file_.at<Elf64_Dyn>(*offset + i * sizeof(Elf64_Dyn), "dynamic entry");
      const std::uint64_t v = e.d_un.d_val;
      const auto once = [&](std::optional<std::uint64_t>& slot, const char* name) {
        if (slot) bad(std::string("second ") + name);
        slot = v;
      };
      switch (e.d_tag) {
        case DT_NULL:
          terminated = true;
          break;
        case DT_NEEDED:
          if (dyn_.needed.size() >= kMaxNeeded) bad("too many DT_NEEDED entries");
          dyn_.needed.push_back(v);
          break;
        case DT_RPATH:
          dyn_.rpath.push_back(v);
          break;
        case DT_RUNPATH:
          dyn_.runpath.push_back(v);
          break;
        case DT_FILTER:
        case DT_AUXILIARY:
        case DT_AUDIT:
        case DT_DEPAUDIT:
          dyn_.filters.push_back(v);
          break;
        case DT_STRTAB:
          once(dyn_.strtab, "DT_STRTAB");
          break;
        case DT_STRSZ:
          once(dyn_.strsz, "DT_STRSZ");
          break;
        case DT_SYMTAB:
          once(dyn_.symtab, "DT_SYMTAB");
          break;
        case DT_SYMENT:
          once(dyn_.syment, "DT_SYMENT");
          break;
        case DT_GNU_HASH:
          once(dyn_.gnu_hash, "DT_GNU_HASH");
          break;
        case DT_HASH:
          once(dyn_.sysv_hash, "DT_HASH");
          break;
        default:
          break;
      }
      if (terminated) break;
    }
    if (!terminated) bad("dynamic section has no DT_NULL terminator");
    if (!dyn_.strtab || !dyn_.strsz) bad("no DT_STRTAB/DT_STRSZ");
    if (!dyn_.symtab && !dependency_) bad("no DT_SYMTAB");
    if (dyn_.syment && *dyn_.syment != sizeof(Elf64_Sym)) bad("DT_SYMENT is not 24");
    const auto strtab = map_.offset_of(*dyn_.strtab, *dyn_.strsz);
    if (!strtab || *dyn_.strsz == 0) bad("DT_STRTAB/DT_STRSZ not inside a PT_LOAD");
    strtab_offset_ = *strtab;
  }

  // String at `index` of the dynamic string table.
  std::string string_at(std::uint64_t index, const char* what) const {
    const std::uint64_t size = *dyn_.strsz;
    if (index >= size) bad(std::string(what) + " string offset is past DT_STRSZ");
    const std::string_view rest = file_.text(strtab_offset_ + index, size - index);
    const std::size_t end = rest.find('\0');
    if (end == std::string_view::npos) bad(std::string(what) + " string is not terminated");
    return std::string(rest.substr(0, end));
  }

  void resolve_strings() {
    for (const auto v : dyn_.needed) view_.needed.push_back(string_at(v, "DT_NEEDED"));
    for (const auto v : dyn_.rpath) view_.rpath.push_back(string_at(v, "DT_RPATH"));
    for (const auto v : dyn_.runpath) view_.runpath.push_back(string_at(v, "DT_RUNPATH"));
    for (const auto v : dyn_.filters) view_.filters.push_back(string_at(v, "filter"));
  }

  // The symbol at `index` of DT_SYMTAB, bounds-checked against its PT_LOAD.
  Elf64_Sym symbol_at(std::uint64_t index) const {
    if (index > (std::numeric_limits<std::uint64_t>::max() - *dyn_.symtab) / sizeof(Elf64_Sym)) {
      bad("symbol index overflows");
    }
    const auto offset = map_.offset_of(*dyn_.symtab + index * sizeof(Elf64_Sym), sizeof(Elf64_Sym));
    if (!offset) bad("symbol " + std::to_string(index) + " lies outside DT_SYMTAB's PT_LOAD");
    return file_.at<Elf64_Sym>(*offset, "symbol");
  }

  bool name_matches(const Elf64_Sym& sym) const {
    if (sym.st_name >= *dyn_.strsz) bad("symbol name offset is past DT_STRSZ");
    const std::uint64_t rest = *dyn_.strsz - sym.st_name;
    if (rest <= symbol_.size()) return false;
    const std::string_view name = file_.text(strtab_offset_ + sym.st_name, symbol_.size() + 1);
    return name.substr(0, symbol_.size()) == symbol_ && name[symbol_.size()] == '\0';
  }

  // u32 array element `index` starting at vaddr `base`.
  std::uint32_t word_at(std::uint64_t base, std::uint64_t index, const char* what) const {
    if (index > (std::numeric_limits<std::uint64_t>::max() - base) / 4) bad("hash index overflows");
    const auto offset = map_.offset_of(base + index * 4, 4);
    if (!offset) bad(std::string(what) + " lies outside its PT_LOAD");
    return file_.at<std::uint32_t>(*offset, what);
  }

  // Lookup as ld.so's do_lookup_x: through DT_GNU_HASH when present, else DT_HASH.
  std::optional<Elf64_Sym> lookup() const {
    if (dyn_.gnu_hash) {
      const std::uint64_t base = *dyn_.gnu_hash;
      const std::uint32_t nbuckets = word_at(base, 0, "DT_GNU_HASH header");
      const std::uint32_t symoffset = word_at(base, 1, "DT_GNU_HASH header");
      const std::uint32_t bloom_size = word_at(base, 2, "DT_GNU_HASH header");
      const std::uint32_t bloom_shift = word_at(base, 3, "DT_GNU_HASH header");
      if (nbuckets == 0) return std::nullopt;
      if (!is_power_of_two(bloom_size)) bad("DT_GNU_HASH bloom size is not a power of 2");
      if (bloom_shift >= 32) bad("DT_GNU_HASH bloom shift is not below 32");
      const std::uint32_t h = gnu_hash(symbol_);
      const std::uint64_t bloom_base = base + 16;
      const std::uint64_t bloom_index = (h / 64) & (bloom_size - 1);
      const auto bloom_offset = map_.offset_of(add(bloom_base, bloom_index * 8, "bloom"), 8);
      if (!bloom_offset || !map_.offset_of(bloom_base, std::uint64_t{bloom_size} * 8)) {
        bad("DT_GNU_HASH bloom filter lies outside its PT_LOAD");
      }
      const auto word = file_.at<std::uint64_t>(*bloom_offset, "bloom word");
      const std::uint64_t mask = (1ull << (h % 64)) | (1ull << ((h >> bloom_shift) % 64));
      const std::uint64_t buckets = bloom_base + std::uint64_t{bloom_size} * 8;
      if (!map_.offset_of(buckets, std::uint64_t{nbuckets} * 4)) {
        bad("DT_GNU_HASH buckets lie outside their PT_LOAD");
      }
      if ((word & mask) != mask) return std::nullopt;
      const std::uint32_t first = word_at(buckets, h % nbuckets, "DT_GNU_HASH bucket");
      if (first == 0) return std::nullopt;
      if (first < symoffset) bad("DT_GNU_HASH bucket points below symoffset");
      const std::uint64_t chains = buckets + std::uint64_t{nbuckets} * 4;
      for (std::uint64_t i = first, steps = 0;; ++i, ++steps) {
        if (steps > kMaxChainSteps) bad("DT_GNU_HASH chain too long");
        const std::uint32_t chain = word_at(chains, i - symoffset, "DT_GNU_HASH chain");
        if (((chain ^ h) >> 1) == 0) {
          const Elf64_Sym sym = symbol_at(i);
          if (name_matches(sym)) return sym;
        }
        if ((chain & 1) != 0) return std::nullopt;
      }
    }
    if (dyn_.sysv_hash) {
      const std::uint64_t base = *dyn_.sysv_hash;
      const std::uint32_t nbucket = word_at(base, 0, "DT_HASH header");
      const std::uint32_t nchain = word_at(base, 1, "DT_HASH header");
      if (nbucket == 0) return std::nullopt;
      const std::uint32_t h = elf_hash(symbol_);
      std::uint32_t i = word_at(base, 2 + h % nbucket, "DT_HASH bucket");
      for (std::uint64_t steps = 0; i != STN_UNDEF; ++steps) {
        if (i >= nchain) bad("DT_HASH chain index past nchain");
        if (steps > nchain) bad("DT_HASH chain loops");
        const Elf64_Sym sym = symbol_at(i);
        if (name_matches(sym)) return sym;
        i = word_at(base, 2 + std::uint64_t{nbucket} + i, "DT_HASH chain");
      }
      return std::nullopt;
    }
    bad("no DT_GNU_HASH or DT_HASH: the entry symbol cannot be looked up");
  }

  void find_entry() {
    const auto sym = lookup();
    if (!sym) {
      view_.entry_problem = "absent from the dynamic symbol hash table";
      return;
    }
    const unsigned type = ELF64_ST_TYPE(sym->st_info);
    const unsigned binding = ELF64_ST_BIND(sym->st_info);
    if (sym->st_shndx == SHN_UNDEF) {
      view_.entry_problem = "only referenced, not defined";
    } else if (type == STT_GNU_IFUNC) {
      view_.entry_problem = "an IFUNC (its resolver would run at lookup)";
    } else if (type != STT_FUNC) {
      view_.entry_problem = "not a function";
    } else if ((binding != STB_GLOBAL && binding != STB_WEAK) ||
               ELF64_ST_VISIBILITY(sym->st_other) != STV_DEFAULT) {
      view_.entry_problem = "not exported";
    } else if (sym->st_shndx != SHN_ABS && !map_.in_memory(sym->st_value)) {
      view_.entry_problem = "its address lies outside every PT_LOAD";
    } else {
      view_.entry_found = true;
    }
  }

  // Fallback for a note kept only in a section (not in any PT_NOTE): reads the section headers.
  void read_note_sections() {
    if (header_.e_shnum == 0 || header_.e_shoff == 0) return;
    if (header_.e_shentsize != sizeof(Elf64_Shdr) ||
        !file_.in_file(header_.e_shoff, std::uint64_t{header_.e_shnum} * sizeof(Elf64_Shdr))) {
      bad("section header table lies outside the file");
    }
    if (header_.e_shstrndx >= header_.e_shnum) bad("bad section name table index");
    const auto section = [&](std::uint64_t i) {
      return file_.at<Elf64_Shdr>(header_.e_shoff + i * sizeof(Elf64_Shdr), "section header");
    };
    const Elf64_Shdr names = section(header_.e_shstrndx);
    if (names.sh_type == SHT_NOBITS || !file_.in_file(names.sh_offset, names.sh_size)) {
      bad("section name table lies outside the file");
    }
    for (std::uint64_t i = 0; i < header_.e_shnum; ++i) {
      const Elf64_Shdr s = section(i);
      if (s.sh_type != SHT_NOTE || s.sh_name >= names.sh_size) continue;
      const std::string_view rest =
          file_.text(names.sh_offset + s.sh_name, names.sh_size - s.sh_name);
      if (rest.substr(0, rest.find('\0')) != kIdentityNoteSection) continue;
      read_notes(s.sh_offset, s.sh_size, s.sh_addralign);
    }
  }

  Reader file_;
  std::string_view symbol_;
  bool dependency_;
  Elf64_Ehdr header_{};
  AddressMap map_;
  std::optional<Elf64_Phdr> dynamic_;
  std::vector<Elf64_Phdr> notes_;
  Dynamic dyn_;
  std::uint64_t strtab_offset_ = 0;
  ElfPluginView view_;
};

}  // namespace

ElfPluginView read_elf_plugin(std::span<const std::byte> bytes, std::string_view symbol) {
  if (symbol.empty()) throw MalformedElf("no entry symbol to look up");
  return Parser(bytes, symbol).run();
}

ElfPluginView read_elf_dependency(std::span<const std::byte> bytes) {
  return Parser(bytes, {}).run();
}

}  // namespace ctx::plugins::detail
