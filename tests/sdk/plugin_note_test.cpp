// The identity note CTX_PLUGIN emits: its compile-time rules and text, and, for every plugin module
// this build produces (in-tree plugins, fixtures, benchmark plugins; not the loader's attack
// fixtures, which lie on purpose), that the note read from the file's bytes is well formed and
// equals the descriptor its entry returns.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <ctx/sdk/plugin.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/canonical_json.hpp"

namespace {

using ctx::core::Json;
namespace internal = ctx::sdk::internal;

// --- Compile-time rules -----------------------------------------------------------------------
static_assert(internal::is_valid_id("a"));
static_assert(internal::is_valid_id("hmac-sha256"));
static_assert(internal::is_valid_id("0.x_y-z"));
constexpr char kId64[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
constexpr char kId65[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static_assert(sizeof kId64 == 65 && sizeof kId65 == 66);
static_assert(internal::is_valid_id(kId64));
static_assert(!internal::is_valid_id(""));
static_assert(!internal::is_valid_id(kId65));
static_assert(!internal::is_valid_id("-leading"));
static_assert(!internal::is_valid_id(".leading"));
static_assert(!internal::is_valid_id("Upper"));
static_assert(!internal::is_valid_id("with space"));
static_assert(!internal::is_valid_id("quo\"te"));
static_assert(!internal::is_valid_id("nul\0inside"));
static_assert(!internal::is_valid_id("slash/"));

static_assert(internal::is_valid_version("0.0.0"));
static_assert(internal::is_valid_version("1.22.333"));
static_assert(internal::is_valid_version("1.0.0-rc.1"));
static_assert(internal::is_valid_version("1.0.0-0a.x-y+build.5"));
static_assert(internal::is_valid_version("1.0.0+20260101"));
static_assert(!internal::is_valid_version(""));
static_assert(!internal::is_valid_version("1"));
static_assert(!internal::is_valid_version("1.0"));
static_assert(!internal::is_valid_version("1.0.0."));
static_assert(!internal::is_valid_version("01.0.0"));
static_assert(!internal::is_valid_version("1.0.0-"));
static_assert(!internal::is_valid_version("1.0.0-01"));
static_assert(!internal::is_valid_version("1.0.0+"));
static_assert(!internal::is_valid_version("1.0.0-a..b"));
static_assert(!internal::is_valid_version("1.0.0\""));
static_assert(!internal::is_valid_version("v1.0.0"));

constexpr auto kSampleNote =
    internal::make_identity_note<1, 7, ctx::sdk::plugin_kind::host_adapter>("a.b-c", "10.0.1-x");
static_assert(kSampleNote.namesz == 4 && kSampleNote.type == 1);
static_assert(sizeof kSampleNote.desc % 4 == 0 && sizeof kSampleNote.desc >= kSampleNote.descsz);
static_assert(sizeof kSampleNote.desc - kSampleNote.descsz < 4);

TEST(PluginNote, ConstantIsTheCanonicalJsonOfItsArguments) {
  const std::string json(kSampleNote.json(), kSampleNote.descsz);
  EXPECT_EQ(json,
            R"({"abi":{"major":1,"minor":7},"id":"a.b-c","kind":"host-adapter",)"
            R"("version":"10.0.1-x"})");
  const Json expected = {{"abi", {{"major", 1}, {"minor", 7}}},
                         {"id", "a.b-c"},
                         {"kind", "host-adapter"},
                         {"version", "10.0.1-x"}};
  EXPECT_EQ(json, ctx::core::canonical_json(expected));
  EXPECT_EQ(std::memcmp(kSampleNote.name, "ctx", 4), 0);
  for (std::size_t i = kSampleNote.descsz; i < sizeof kSampleNote.desc; ++i) {
    EXPECT_EQ(kSampleNote.desc[i], '\0') << "padding byte " << i;
  }
}

TEST(PluginNote, MultiDigitAbiNumbersAreSpelledInDecimal) {
  constexpr auto note =
      internal::make_identity_note<4294967295u, 10, ctx::sdk::plugin_kind::installer>("x", "1.2.3");
  EXPECT_EQ(std::string(note.json(), note.descsz),
            R"({"abi":{"major":4294967295,"minor":10},"id":"x","kind":"installer",)"
            R"("version":"1.2.3"})");
}

// --- The notes of the built modules -----------------------------------------------------------

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

template <typename T>
T read_at(const std::string& bytes, std::size_t offset) {
  T value{};
  if (offset > bytes.size() || bytes.size() - offset < sizeof value) {
    throw std::runtime_error("read past the end of the file at " + std::to_string(offset));
  }
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

struct FoundNote {
  std::uint32_t namesz = 0;
  std::uint32_t type = 0;
  std::string name;         // namesz bytes
  std::string desc;         // descsz bytes
  std::string desc_padding;  // the bytes up to the next 4-byte boundary
  std::uint64_t file_offset = 0;
};

// Every note owned by "ctx" in [offset, offset + size) of an ELF note area with 4-byte padding.
void collect_ctx_notes(const std::string& bytes, std::uint64_t offset, std::uint64_t size,
                       std::vector<FoundNote>& out) {
  const auto pad4 = [](std::uint64_t n) { return (n + 3) / 4 * 4; };
  std::uint64_t at = offset;
  while (at + sizeof(Elf64_Nhdr) <= offset + size) {
    const auto header = read_at<Elf64_Nhdr>(bytes, at);
    const std::uint64_t name_at = at + sizeof header;
    const std::uint64_t desc_at = name_at + pad4(header.n_namesz);
    const std::uint64_t next = desc_at + pad4(header.n_descsz);
    if (next > offset + size) throw std::runtime_error("a note runs past its area");
    FoundNote note;
    note.namesz = header.n_namesz;
    note.type = header.n_type;
    note.name = bytes.substr(name_at, header.n_namesz);
    note.desc = bytes.substr(desc_at, header.n_descsz);
    note.desc_padding =
        bytes.substr(desc_at + header.n_descsz, pad4(header.n_descsz) - header.n_descsz);
    note.file_offset = at;
    if (note.name == std::string("ctx", 4)) out.push_back(note);
    at = next;
  }
}

// The ctx notes as the loader sees the file: through the program headers (PT_NOTE, 4-aligned).
std::vector<FoundNote> notes_from_program_headers(const std::string& bytes) {
  const auto ehdr = read_at<Elf64_Ehdr>(bytes, 0);
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != ELFCLASS64) {
    throw std::runtime_error("not an ELF64 file");
  }
  std::vector<FoundNote> notes;
  for (std::uint16_t i = 0; i < ehdr.e_phnum; ++i) {
    const auto phdr =
        read_at<Elf64_Phdr>(bytes, ehdr.e_phoff + std::uint64_t{i} * ehdr.e_phentsize);
    if (phdr.p_type == PT_NOTE && phdr.p_align == 4) {
      collect_ctx_notes(bytes, phdr.p_offset, phdr.p_filesz, notes);
    }
  }
  return notes;
}

// The section called ".note.ctx.plugin": its type and file range.
struct NoteSection {
  bool found = false;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

NoteSection note_section(const std::string& bytes) {
  const auto ehdr = read_at<Elf64_Ehdr>(bytes, 0);
  const auto strtab = read_at<Elf64_Shdr>(
      bytes, ehdr.e_shoff + std::uint64_t{ehdr.e_shstrndx} * ehdr.e_shentsize);
  NoteSection result;
  for (std::uint16_t i = 0; i < ehdr.e_shnum; ++i) {
    const auto shdr =
        read_at<Elf64_Shdr>(bytes, ehdr.e_shoff + std::uint64_t{i} * ehdr.e_shentsize);
    const std::size_t name_at = strtab.sh_offset + shdr.sh_name;
    if (name_at >= bytes.size()) continue;
    if (std::strcmp(bytes.c_str() + name_at, ".note.ctx.plugin") == 0) {
      result = NoteSection{true, shdr.sh_type, shdr.sh_offset, shdr.sh_size};
    }
  }
  return result;
}

const char* kind_name(std::uint32_t kind) {
  switch (kind) {
    case CTX_KIND_INSTALLER: return "installer";
    case CTX_KIND_VERIFIER: return "verifier";
    case CTX_KIND_HOST_ADAPTER: return "host-adapter";
  }
  return "unknown";
}

// One module per line; "<path>\tnote-only" marks a fixture whose entry misbehaves on purpose
// (exits, aborts, loops or prints): its note is checked, its entry is not run.
struct Module {
  std::string path;
  bool note_only = false;
};

std::vector<Module> built_modules() {
  std::vector<Module> modules;
  std::istringstream list(read_file(CTX_PLUGIN_MODULE_LIST));
  for (std::string line; std::getline(list, line);) {
    if (line.empty()) continue;
    const auto tab = line.find('\t');
    modules.push_back(tab == std::string::npos
                          ? Module{line, false}
                          : Module{line.substr(0, tab), line.substr(tab + 1) == "note-only"});
  }
  return modules;
}

TEST(PluginNote, ListCoversTheInTreePluginsAndFixtures) {
  const std::vector<Module> modules = built_modules();
  for (const char* name : {"ctx_plugin_hmac_sha256.so", "ctx_plugin_skill_installer.so",
                           "ctx_plugin_generic_host.so", "ctx_plugin_fixture_valid_verifier.so",
                           "ctx_plugin_fixture_wrong_major.so"}) {
    bool listed = false;
    for (const Module& m : modules) listed = listed || m.path.find(name) != std::string::npos;
    EXPECT_TRUE(listed) << name << " is not in " << CTX_PLUGIN_MODULE_LIST;
  }
}

TEST(PluginNote, EveryBuiltModuleCarriesOneNoteEqualToItsDescriptor) {
  const std::vector<Module> modules = built_modules();
  ASSERT_FALSE(modules.empty());
  for (const auto& [module, note_only] : modules) {
    SCOPED_TRACE(module);
    const std::string bytes = read_file(module);
    ASSERT_FALSE(bytes.empty());
    const std::vector<FoundNote> notes = notes_from_program_headers(bytes);
    ASSERT_EQ(notes.size(), 1u) << "ctx notes found through PT_NOTE";
    const FoundNote& note = notes.front();
    EXPECT_EQ(note.namesz, 4u);
    EXPECT_EQ(note.name, std::string("ctx\0", 4));
    EXPECT_EQ(note.type, 1u);
    EXPECT_EQ(note.desc_padding, std::string(note.desc_padding.size(), '\0'));
    EXPECT_EQ(note.desc.find('\0'), std::string::npos);

    // The section view agrees: one SHT_NOTE section holding exactly this note.
    const NoteSection section = note_section(bytes);
    ASSERT_TRUE(section.found);
    EXPECT_EQ(section.type, static_cast<std::uint32_t>(SHT_NOTE));
    EXPECT_EQ(section.offset, note.file_offset);
    EXPECT_EQ(section.size, 12 + 4 + note.desc.size() + note.desc_padding.size());

    // Canonical JSON with exactly the four members.
    Json parsed;
    ASSERT_NO_THROW(parsed = ctx::core::parse_canonical_json(note.desc)) << note.desc;
    ASSERT_TRUE(parsed.is_object());
    EXPECT_EQ(parsed.size(), 4u) << note.desc;

    if (note_only) {
      EXPECT_EQ(parsed.at("id"), "fixture-misbehave");
      continue;
    }
    // The entry's descriptor, spelled the same way, is byte-equal to the note.
    void* handle = ::dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << ::dlerror();
    const auto entry =
        reinterpret_cast<ctx_plugin_entry_fn>(::dlsym(handle, CTX_PLUGIN_ENTRY_SYMBOL));
    if (module.find("ctx_plugin_fixture_missing_entry") != std::string::npos) {
      EXPECT_EQ(entry, nullptr) << "the missing-entry fixture exports ctx_plugin_entry";
      EXPECT_EQ(parsed.at("id"), "fixture-missing-entry");
    } else {
      ASSERT_NE(entry, nullptr);
      const ctx_host_negotiation host{sizeof(ctx_host_negotiation), CTX_ABI_MAJOR, 0,
                                      CTX_ABI_MINOR};
      const ctx_plugin_descriptor* d = entry(&host);
      ASSERT_NE(d, nullptr);
      const Json from_descriptor = {
          {"abi", {{"major", d->abi_major}, {"minor", d->abi_minor_required}}},
          {"id", d->id},
          {"kind", kind_name(d->kind)},
          {"version", d->version}};
      EXPECT_EQ(note.desc, ctx::core::canonical_json(from_descriptor));
    }
    ::dlclose(handle);
  }
}

}  // namespace
