// The attacks of issue 9 against the loader, each with real files, real processes and a marker
// file written by every constructor: pinning executes nothing, a lying note is refused, search
// paths and untrusted dependencies are refused, the loader environment is refused, the section
// view cannot smuggle an entry past the dynamic view, the directory chain is checked, racers
// renaming foreign bytes onto every path the loader touches never get code run, and a corpus of
// malformed ELF files yields typed errors only.
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <ctx/loader/detail/elf_reader.hpp>
#include <ctx/loader/errors.hpp>
#include <ctx/loader/plugin_loader.hpp>
#include <string>
#include <thread>
#include <vector>

#include "host/core/crypto.hpp"
#include "tests/host/plugins/plugin_test_support.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::plugins {
namespace {

namespace fs = std::filesystem;
using ctx::testing::copy_plugin;
using ctx::testing::read_bytes;
using ctx::testing::TempDir;
using ctx::testing::write_bytes;

constexpr uid_t kNobody = 65534;

#if defined(__x86_64__)
constexpr const char* kLibDir = "/usr/lib/x86_64-linux-gnu";
#else
constexpr const char* kLibDir = "/usr/lib/aarch64-linux-gnu";
#endif

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// The pin of `file` built from its bytes alone (sha256, size; no parsing).
LockEntry raw_entry(const fs::path& file, const std::string& id) {
  const std::string bytes = read_bytes(file);
  LockEntry e;
  e.kind = PluginKind::kVerifier;
  e.id = id;
  e.version = "1.0.0";
  e.sha256 = core::sha256_hex(bytes);
  e.size = bytes.size();
  e.abi_major = CTX_ABI_MAJOR;
  e.platform = current_platform();
  e.path = fs::absolute(file).lexically_normal().string();
  return e;
}

class LoaderAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    marker_ = (marker_dir_ / "marker").string();
    ::setenv("CTX_TEST_MARKER", marker_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("CTX_TEST_MARKER"); }

  // What constructors wrote so far ("" when none ran).
  std::string marks() const { return fs::exists(marker_) ? read_bytes(marker_) : ""; }
  fs::path copy(const char* fixture, const std::string& name) {
    return copy_plugin(fixture, files_ / name);
  }

  TempDir files_, state_, marker_dir_;
  std::string marker_;
  PluginLoader loader_{state_.path()};
};

TEST_F(LoaderAttackTest, PinAndVerifyReadTheNoteAndExecuteNothing) {
  const fs::path file = copy(CTX_ATTACK_PINNED, "pinned.so");
  const LockEntry pinned = loader_.inspect_for_pin(file);
  EXPECT_EQ(pinned.id, "attack-pinned");
  EXPECT_EQ(pinned.kind, PluginKind::kVerifier);
  EXPECT_EQ(pinned.version, "1.0.0");
  EXPECT_EQ(pinned.size, fs::file_size(file));
  EXPECT_EQ(loader_.check(pinned), pinned.identity());
  EXPECT_EQ(marks(), "") << "pin or verify executed the plugin";
  // Control: loading does run the pinned constructor.
  const auto plugin = loader_.load(pinned);
  EXPECT_EQ(marks(), "pinned\n");
  EXPECT_EQ(plugin->identity(), pinned.identity());
}

TEST_F(LoaderAttackTest, PluginWithoutANoteCannotBePinnedOrLoaded) {
  const fs::path file = copy(CTX_ATTACK_NO_NOTE, "no-note.so");
  CTX_EXPECT_THROW(loader_.inspect_for_pin(file), PluginNoteMismatch,
                   "has no identity note (section .note.ctx.plugin, note \"ctx\" type 1)");
  LockEntry e = raw_entry(file, "attack-no-note");
  const std::string bytes = read_bytes(file);
  e.needed = detail::read_elf_plugin(std::as_bytes(std::span(bytes.data(), bytes.size())),
                                     "ctx_plugin_entry")
                 .needed;
  CTX_EXPECT_THROW(loader_.load(e), PluginNoteMismatch, "has no identity note");
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, NoteThatDisagreesWithTheEntryIsRefusedAtLoad) {
  const LockEntry pinned = loader_.inspect_for_pin(copy(CTX_ATTACK_NOTE_LIES, "lies.so"));
  EXPECT_EQ(pinned.id, "attack-note-lies");
  EXPECT_EQ(marks(), "");
  CTX_EXPECT_THROW(loader_.load(pinned), PluginNoteMismatch,
                   "its entry returned verifier:attack-entry-other 1.0.0 (abi 1.0) but its "
                   "identity note declares verifier:attack-note-lies 1.0.0 (abi 1.0)");
  // A lock that disagrees with the note is refused before anything is mapped.
  LockEntry other = loader_.inspect_for_pin(copy(CTX_ATTACK_PINNED, "pinned.so"));
  other.version = "2.0.0";
  ::unlink(marker_.c_str());
  CTX_EXPECT_THROW(loader_.load(other), PluginNoteMismatch,
                   "its identity note declares verifier:attack-pinned 1.0.0 (abi 1.0); the lock "
                   "pins verifier:attack-pinned 2.0.0");
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, RunpathAndRpathAreRefused) {
  CTX_EXPECT_THROW(loader_.inspect_for_pin(copy(CTX_ATTACK_RUNPATH, "runpath.so")),
                   UnsafeDependency, "has DT_RUNPATH \"/tmp/ctx-attack-libs\"");
  CTX_EXPECT_THROW(loader_.inspect_for_pin(copy(CTX_ATTACK_RPATH, "rpath.so")), UnsafeDependency,
                   "has DT_RPATH \"/tmp/ctx-attack-libs\"");
  // A lock entry written by hand for the same bytes does not get them loaded either.
  LockEntry e = raw_entry(files_ / "runpath.so", "attack-runpath");
  CTX_EXPECT_THROW(loader_.load(e), UnsafeDependency, "DT_RUNPATH");
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, AbsoluteNeededIsRefused) {
  CTX_EXPECT_THROW(loader_.inspect_for_pin(copy(CTX_ATTACK_ABS_NEEDED, "abs.so")), UnsafeDependency,
                   "a DT_NEEDED containing '/'");
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, NeededThatOnlyLdLibraryPathFindsIsRefused) {
  const fs::path file = copy(CTX_ATTACK_BARE_NEEDED, "bare.so");
  CTX_EXPECT_THROW(loader_.inspect_for_pin(file), UnsafeDependency,
                   "needs \"libctx_attack_dep2.so\": it does not resolve");
  {
    const ScopedEnv env("LD_LIBRARY_PATH", fs::path(CTX_ATTACK_DEP2).parent_path().string());
    CTX_EXPECT_THROW(loader_.inspect_for_pin(file), UnsafeDependency, "does not resolve");
    LockEntry e = raw_entry(file, "attack-bare-needed");
    e.needed = {"libctx_attack_dep2.so"};
    CTX_EXPECT_THROW(loader_.load(e), LoaderEnvironmentRefused,
                     "refusing to load plugins while LD_LIBRARY_PATH is set");
  }
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, DependencyOwnedByAnotherUidOrWritableIsRefusedAndReChecked) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: needs root to place a library in " << kLibDir;
  const fs::path lib = fs::path(kLibDir) / "libctx_attack_dep2.so";
  ASSERT_FALSE(fs::exists(lib)) << lib << " left over from another run";
  struct Remove {
    fs::path path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove{lib};
  copy_plugin(CTX_ATTACK_DEP2, lib);
  const fs::path file = copy(CTX_ATTACK_BARE_NEEDED, "bare.so");

  ASSERT_EQ(::chown(lib.c_str(), kNobody, kNobody), 0);
  CTX_EXPECT_THROW(loader_.inspect_for_pin(file), UnsafeDependency,
                   "is not trusted: library " + lib.string() + " has the wrong owner (uid 65534");
  ASSERT_EQ(::chown(lib.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(lib.c_str(), 0666), 0);
  CTX_EXPECT_THROW(loader_.inspect_for_pin(file), UnsafeDependency, "group- or world-writable");
  EXPECT_EQ(marks(), "");

  ASSERT_EQ(::chmod(lib.c_str(), 0644), 0);
  const LockEntry pinned = loader_.inspect_for_pin(file);
  EXPECT_EQ(pinned.needed.front(), "libctx_attack_dep2.so");
  // verify re-checks the dependency: handing it to another uid makes the pin fail.
  ASSERT_EQ(::chown(lib.c_str(), kNobody, kNobody), 0);
  CTX_EXPECT_THROW(loader_.check(pinned), UnsafeDependency, "wrong owner");
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafeDependency, "wrong owner");
  EXPECT_EQ(marks(), "");
  ASSERT_EQ(::chown(lib.c_str(), 0, 0), 0);
  // And the lock's recorded sonames must be the file's.
  LockEntry other = pinned;
  other.needed.push_back("libextra.so.1");
  CTX_EXPECT_THROW(loader_.check(other), UnsafeDependency, "the lock records");
  // The trusted, pinned dependency loads with the plugin.
  loader_.load(pinned);
  EXPECT_EQ(marks(), "dependency\nbare-needed\n");
}

TEST_F(LoaderAttackTest, LoaderEnvironmentIsRefusedNamingTheVariableUnlessAllowed) {
  const LockEntry pinned = loader_.inspect_for_pin(copy(CTX_ATTACK_PINNED, "pinned.so"));
  for (const char* name : {"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"}) {
    SCOPED_TRACE(name);
    const ScopedEnv env(name, "/nonexistent/libevil.so");
    CTX_EXPECT_THROW(loader_.load(pinned), LoaderEnvironmentRefused,
                     std::string("while ") + name + " is set");
    EXPECT_EQ(marks(), "");
    const ScopedEnv allow("CTX_ALLOW_LOADER_ENV", "1");
    ::testing::internal::CaptureStderr();
    EXPECT_NO_THROW(loader_.load(pinned));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(std::string(name) + " is set; loading plugins anyway because "
                                           "CTX_ALLOW_LOADER_ENV=1"),
              std::string::npos)
        << err;
    ::unlink(marker_.c_str());
  }
}

// File offset of the DT_GNU_HASH table of an ELF image (test-side, trusting its input).
std::size_t gnu_hash_offset(const std::string& bytes) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  std::memcpy(ph.data(), bytes.data() + eh.e_phoff, ph.size() * sizeof(Elf64_Phdr));
  const auto to_offset = [&](std::uint64_t vaddr) -> std::size_t {
    for (const auto& p : ph) {
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz) {
        return p.p_offset + (vaddr - p.p_vaddr);
      }
    }
    throw std::runtime_error("vaddr outside PT_LOAD");
  };
  for (const auto& p : ph) {
    if (p.p_type != PT_DYNAMIC) continue;
    for (std::size_t off = p.p_offset; off + sizeof(Elf64_Dyn) <= p.p_offset + p.p_filesz;
         off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, bytes.data() + off, sizeof d);
      if (d.d_tag == DT_GNU_HASH) return to_offset(d.d_un.d_ptr);
    }
  }
  throw std::runtime_error("no DT_GNU_HASH");
}

TEST_F(LoaderAttackTest, SectionTableCannotSpellAnEntryTheDynamicLookupDoesNotFind) {
  // Empty the GNU hash bloom filter: ld.so's lookup (and ours) no longer finds the entry, while
  // .dynsym and .dynstr - the section view - still spell ctx_plugin_entry.
  std::string bytes = read_bytes(CTX_ATTACK_PINNED);
  const std::size_t hash = gnu_hash_offset(bytes);
  std::uint32_t bloom_size = 0;
  std::memcpy(&bloom_size, bytes.data() + hash + 8, 4);
  ASSERT_GT(bloom_size, 0u);
  std::memset(bytes.data() + hash + 16, 0, std::size_t{bloom_size} * 8);
  ASSERT_NE(bytes.find("ctx_plugin_entry"), std::string::npos);
  const fs::path file = files_ / "section-view.so";
  write_bytes(file, bytes);
  ::chmod(file.c_str(), 0755);
  CTX_EXPECT_THROW(loader_.inspect_for_pin(file), MissingEntrySymbol,
                   "does not export the entry symbol ctx_plugin_entry (absent from the dynamic "
                   "symbol hash table)");
  LockEntry e = raw_entry(file, "attack-pinned");
  e.needed = detail::read_elf_plugin(std::as_bytes(std::span(bytes.data(), bytes.size())),
                                     "ctx_plugin_entry")
                 .needed;
  CTX_EXPECT_THROW(loader_.load(e), MissingEntrySymbol, "absent from the dynamic symbol hash");
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, PathInsideTheStateDirectoryIsRefused) {
  const fs::path inside = state_.path() / "plugins" / "sha256";
  fs::create_directories(inside);
  const fs::path file = copy_plugin(CTX_ATTACK_PINNED, inside / "old.so");
  CTX_EXPECT_THROW(loader_.inspect_for_pin(file), UnsafePluginFile,
                   "is inside the state directory");
  LockEntry e = loader_.inspect_for_pin(copy(CTX_ATTACK_PINNED, "pinned.so"));
  e.path = file.string();
  CTX_EXPECT_THROW(loader_.load(e), UnsafePluginFile, "is inside the state directory");
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, EveryDirectoryFromTheRootIsChecked) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: needs root to hand a directory to uid 65534";
  const fs::path dir = files_ / "a" / "b";
  fs::create_directories(dir);
  const fs::path file = copy_plugin(CTX_ATTACK_PINNED, dir / "p.so");
  const LockEntry pinned = loader_.inspect_for_pin(file);
  ASSERT_EQ(::chmod((files_ / "a").c_str(), 0777), 0);
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafePluginFile,
                   "directory " + (files_ / "a").string() + " is writable by group or other");
  ASSERT_EQ(::chmod((files_ / "a").c_str(), 0755), 0);
  ASSERT_EQ(::chown((files_ / "a").c_str(), kNobody, kNobody), 0);
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafePluginFile, "has the wrong owner (uid 65534");
  ASSERT_EQ(::chown((files_ / "a").c_str(), 0, 0), 0);
  fs::create_directory_symlink(files_ / "a", files_ / "alias");
  LockEntry via_link = pinned;
  via_link.path = (files_ / "alias" / "b" / "p.so").string();
  CTX_EXPECT_THROW(loader_.load(via_link), UnsafePluginFile, "is a symlink");
  EXPECT_EQ(marks(), "");
  // The other uid can really write there when the directory lets it: 65534 swaps the file.
  ASSERT_EQ(::chmod(files_.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  const std::string swap = "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cp " +
                           std::string(CTX_ATTACK_FOREIGN) + " " + (dir / "x").string() +
                           " && mv -f " + (dir / "x").string() + " " + file.string() + "'";
  ASSERT_EQ(std::system(swap.c_str()), 0);
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafePluginFile, "writable by group or other");
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  CTX_EXPECT_THROW(loader_.load(pinned), UnsafePluginFile, "wrong owner (uid 65534");
  EXPECT_EQ(marks(), "");
}

TEST_F(LoaderAttackTest, RacersRenamingForeignBytesOntoEveryPathNeverGetCodeRun) {
  // The loader touches the directory chain and the file; racers swap both, continuously:
  // one renames foreign/pinned bytes onto the file's name, one exchanges the whole directory
  // with a directory holding foreign bytes under the same name.
  const fs::path live = files_ / "live";
  const fs::path decoy = files_ / "decoy";
  const fs::path stage = files_ / "stage";
  for (const fs::path& d : {live, decoy, stage}) fs::create_directory(d);
  const fs::path target = live / "plugin.so";
  copy_plugin(CTX_ATTACK_PINNED, target);
  copy_plugin(CTX_ATTACK_FOREIGN, decoy / "plugin.so");
  const fs::path pinned_master = copy_plugin(CTX_ATTACK_PINNED, stage / "pinned.so");
  const fs::path foreign_master = copy_plugin(CTX_ATTACK_FOREIGN, stage / "foreign.so");
  const LockEntry pinned = loader_.inspect_for_pin(target);

  std::atomic<bool> stop{false};
  std::barrier start(3);
  // The racers never pause: the file racer puts foreign bytes on the live name, pinned bytes
  // back, and foreign bytes on the decoy's name; the directory racer exchanges the two
  // directories, continuously.
  const auto place = [&](const fs::path& master, const fs::path& dir, int i) {
    const fs::path temp = stage / ("t" + std::to_string(i));
    if (::link(master.c_str(), temp.c_str()) == 0) {
      ::rename(temp.c_str(), (dir / "plugin.so").c_str());
    }
  };
  std::thread file_racer([&] {
    start.arrive_and_wait();
    for (int i = 0; !stop.load(); i += 3) {
      place(foreign_master, live, i);
      place(pinned_master, live, i + 1);
      place(foreign_master, decoy, i + 2);
    }
  });
  std::thread dir_racer([&] {
    start.arrive_and_wait();
    while (!stop.load()) {
      ::renameat2(AT_FDCWD, live.c_str(), AT_FDCWD, decoy.c_str(), RENAME_EXCHANGE);
    }
  });
  start.arrive_and_wait();
  // 200 loads race; if the racers happened to leave only foreign bytes in sight for all of
  // them (a starved racer on a loaded machine), keep racing until the pinned bytes loaded once.
  int loaded = 0, refused = 0;
  for (int i = 0; i < 200 || (loaded == 0 && i < 20000); ++i) {
    try {
      const auto plugin = loader_.load(pinned);
      EXPECT_EQ(plugin->identity(), pinned.identity());
      ++loaded;
    } catch (const PluginError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("attack-pinned"), std::string::npos) << e.what();
    } catch (const NotFound&) {
      ++refused;  // caught between two renames
    }
  }
  stop = true;
  file_racer.join();
  dir_racer.join();
  const std::string seen = marks();
  EXPECT_EQ(seen.find("foreign"), std::string::npos) << "a foreign constructor ran";
  EXPECT_GT(loaded, 0);
  EXPECT_EQ(static_cast<int>(std::count(seen.begin(), seen.end(), '\n')), loaded);
  EXPECT_EQ(seen.find_first_not_of("pinned\n"), std::string::npos);
  std::printf("racing loads: %d loaded (pinned constructor ran each time), %d refused\n", loaded,
              refused);
}

// Every mutation of a valid plugin: truncations, and each ELF header, program header, dynamic
// entry and hash-table word made wild.
std::vector<std::string> malformed_corpus(const std::string& base) {
  std::vector<std::string> corpus;
  const std::uint64_t n = base.size();
  for (std::uint64_t cut : {0ul, 1ul, 4ul, 16ul, 52ul, 63ul, 64ul, 65ul, 120ul, 200ul, 511ul}) {
    if (cut < n) corpus.push_back(base.substr(0, cut));
  }
  for (std::uint64_t cut = 0; cut < n; cut += n / 97 + 1) corpus.push_back(base.substr(0, cut));
  corpus.push_back(base.substr(0, n - 1));
  const std::vector<std::uint64_t> wild = {
      0,          1,     7,         0x7fffffff, 0xffffffff,    n, n + 1, n - 1,
      1ull << 63, ~0ull, ~0ull - 7, 0x1000,     0x100000000ull};
  const auto patched = [&](std::size_t offset, std::size_t width, std::uint64_t value) {
    std::string copy = base;
    if (offset + width <= copy.size()) std::memcpy(copy.data() + offset, &value, width);
    return copy;
  };
  Elf64_Ehdr eh;
  std::memcpy(&eh, base.data(), sizeof eh);
  const std::pair<std::size_t, std::size_t> header_fields[] = {
      {offsetof(Elf64_Ehdr, e_type), 2},      {offsetof(Elf64_Ehdr, e_machine), 2},
      {offsetof(Elf64_Ehdr, e_phoff), 8},     {offsetof(Elf64_Ehdr, e_shoff), 8},
      {offsetof(Elf64_Ehdr, e_phentsize), 2}, {offsetof(Elf64_Ehdr, e_phnum), 2},
      {offsetof(Elf64_Ehdr, e_shentsize), 2}, {offsetof(Elf64_Ehdr, e_shnum), 2},
      {offsetof(Elf64_Ehdr, e_shstrndx), 2}};
  for (const auto& [offset, width] : header_fields) {
    for (const std::uint64_t v : wild) corpus.push_back(patched(offset, width, v));
  }
  for (std::size_t i = 0; i < eh.e_phnum; ++i) {
    const std::size_t ph = eh.e_phoff + i * sizeof(Elf64_Phdr);
    for (std::size_t field = 0; field < sizeof(Elf64_Phdr); field += 8) {
      for (const std::uint64_t v : wild) corpus.push_back(patched(ph + field, 8, v));
    }
    Elf64_Phdr p;
    std::memcpy(&p, base.data() + ph, sizeof p);
    if (p.p_type != PT_DYNAMIC) continue;
    for (std::size_t d = p.p_offset; d + 16 <= p.p_offset + p.p_filesz; d += 16) {
      for (const std::uint64_t v : wild) {
        corpus.push_back(patched(d, 8, v));      // d_tag
        corpus.push_back(patched(d + 8, 8, v));  // d_val
      }
      for (const std::int64_t tag :
           {DT_STRTAB, DT_SYMTAB, DT_GNU_HASH, DT_HASH, DT_STRSZ, DT_NEEDED, DT_RUNPATH, DT_NULL}) {
        corpus.push_back(patched(d, 8, static_cast<std::uint64_t>(tag)));
      }
    }
  }
  const std::size_t hash = gnu_hash_offset(base);
  for (std::size_t word = 0; word < 4; ++word) {
    for (const std::uint64_t v : wild) corpus.push_back(patched(hash + word * 4, 4, v));
  }
  return corpus;
}

TEST_F(LoaderAttackTest, MalformedElfCorpusGivesTypedErrorsNeverASignalNeverCode) {
  const std::string base = read_bytes(CTX_ATTACK_PINNED);
  const std::vector<std::string> corpus = malformed_corpus(base);
  ASSERT_GT(corpus.size(), 1000u);
  int refused = 0, accepted = 0;
  for (const std::string& bytes : corpus) {
    try {  // in process: a crash here fails the whole test binary
      detail::read_elf_plugin(std::as_bytes(std::span(bytes.data(), bytes.size())),
                              "ctx_plugin_entry");
      ++accepted;  // a field ld.so ignores (p_paddr, p_flags, ...) made wild
    } catch (const MalformedElf&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 500);
  // Through the loader's checks on real files (verify's path), a sample of them: typed
  // errors or a clean pass, never code run.
  const fs::path file = files_ / "mutant.so";
  for (std::size_t i = 0; i < corpus.size(); i += 7) {
    write_bytes(file, corpus[i]);
    ::chmod(file.c_str(), 0755);
    LockEntry e = raw_entry(file, "attack-pinned");
    e.needed = {"libc.so.6"};
    try {
      loader_.check(e);
    } catch (const PluginError&) {
    }
  }
  EXPECT_EQ(marks(), "");
  std::printf("malformed corpus: %zu files, %d refused, %d parsed (ignored fields)\n",
              corpus.size(), refused, accepted);
}

}  // namespace
}  // namespace ctx::plugins
