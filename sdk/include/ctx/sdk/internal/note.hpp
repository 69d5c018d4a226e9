// Internal to the SDK (use CTX_PLUGIN or CTX_PLUGIN_NOTE from <ctx/sdk/plugin.hpp>): the identity
// ELF note as a compile-time constant, and the id and version rules checked by static_assert.
//
// Note layout (DESIGN.md §2 "Identity without execution"): in section ".note.ctx.plugin", one ELF
// note with namesz 4 ("ctx" and its NUL), type 1, and as descriptor the canonical JSON
//   {"abi":{"major":M,"minor":m},"id":"…",
//    "kind":"installer"|"verifier"|"host-adapter","version":"…"}   (on one line, no spaces)
// (m = the ABI minor the plugin requires; no NUL; zero-padded to a multiple of 4 bytes).
#ifndef CTX_SDK_INTERNAL_NOTE_HPP_
#define CTX_SDK_INTERNAL_NOTE_HPP_

#include <cstddef>
#include <cstdint>

namespace ctx::sdk::internal {

inline constexpr std::uint32_t kNoteType = 1;
inline constexpr char kNoteName[4] = {'c', 't', 'x', '\0'};

constexpr bool is_lower_or_digit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
constexpr bool is_alnum_or_hyphen(char c) {
  return is_lower_or_digit(c) || (c >= 'A' && c <= 'Z') || c == '-';
}

// The plugin id token rule [a-z0-9][a-z0-9._-]{0,63} over a string literal (size N includes the
// terminating NUL; an embedded NUL fails the rule).
template <std::size_t N>
constexpr bool is_valid_id(const char (&id)[N]) {
  if (N < 2 || N - 1 > 64 || id[N - 1] != '\0' || !is_lower_or_digit(id[0])) return false;
  for (std::size_t i = 1; i + 1 < N; ++i) {
    const char c = id[i];
    if (!is_lower_or_digit(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// Semantic version (semver.org 2.0.0: MAJOR.MINOR.PATCH[-pre.release][+build.meta], numeric parts
// without leading zeros), at most 64 characters, over a string literal.
template <std::size_t N>
constexpr bool is_valid_version(const char (&version)[N]) {
  const std::size_t size = N - 1;
  if (N < 2 || size > 64 || version[size] != '\0') return false;
  std::size_t at = 0;
  for (int part = 0; part < 3; ++part) {  // three numeric identifiers
    const std::size_t start = at;
    while (at < size && version[at] >= '0' && version[at] <= '9') ++at;
    if (at == start || (version[start] == '0' && at - start > 1)) return false;
    if (part < 2) {
      if (at == size || version[at] != '.') return false;
      ++at;
    }
  }
  // Dot-separated non-empty identifiers of [0-9A-Za-z-]; pre-release numerics have no leading 0.
  const auto identifiers = [&](bool prerelease) {
    for (;;) {
      const std::size_t start = at;
      bool numeric = true;
      while (at < size && is_alnum_or_hyphen(version[at])) {
        numeric = numeric && version[at] >= '0' && version[at] <= '9';
        ++at;
      }
      if (at == start) return false;
      if (prerelease && numeric && version[start] == '0' && at - start > 1) return false;
      if (at == size || version[at] != '.') return true;
      ++at;
    }
  };
  if (at < size && version[at] == '-') {
    ++at;
    if (!identifiers(true)) return false;
  }
  if (at < size && version[at] == '+') {
    ++at;
    if (!identifiers(false)) return false;
  }
  return at == size;
}

// Appends to a fixed buffer; with a null buffer it only counts, so one routine both sizes and
// fills the descriptor.
struct Appender {
  char* out;
  std::size_t size;
  constexpr void text(const char* s) {
    for (; *s != '\0'; ++s) put(*s);
  }
  constexpr void number(std::uint32_t value) {
    char digits[10] = {};
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (n > 0) put(digits[--n]);
  }
  constexpr void put(char c) {
    if (out != nullptr) out[size] = c;
    ++size;
  }
};

// Writes the canonical descriptor JSON (keys in sorted order, no whitespace). id, kind and
// version need no escaping: the id and version rules and the three kind names admit no '"' or '\'.
constexpr void append_note_json(Appender& a, std::uint32_t major, std::uint32_t minor,
                                const char* id, const char* kind, const char* version) {
  a.text("{\"abi\":{\"major\":");
  a.number(major);
  a.text(",\"minor\":");
  a.number(minor);
  a.text("},\"id\":\"");
  a.text(id);
  a.text("\",\"kind\":\"");
  a.text(kind);
  a.text("\",\"version\":\"");
  a.text(version);
  a.text("\"}");
}

constexpr std::size_t note_json_size(std::uint32_t major, std::uint32_t minor, const char* id,
                                     const char* kind, const char* version) {
  Appender counter{nullptr, 0};
  append_note_json(counter, major, minor, id, kind, version);
  return counter.size;
}

constexpr std::size_t padded4(std::size_t size) { return (size + 3) / 4 * 4; }

// One ELF note (Elf32_Nhdr and Elf64_Nhdr are both three 32-bit words) with a JSON descriptor of
// `DescSize` bytes, padded.
template <std::size_t DescSize>
struct IdentityNote {
  std::uint32_t namesz;
  std::uint32_t descsz;
  std::uint32_t type;
  char name[sizeof kNoteName];
  char desc[padded4(DescSize)];

  // The descriptor text (exactly descsz bytes, no NUL).
  constexpr const char* json() const { return desc; }
};

// Builds the note for (major, minor, kind name, id, version). Kind is a tag type with
// `static constexpr char kName[]`; the sizes are template arguments so the result type is exact.
template <std::uint32_t Major, std::uint32_t Minor, typename Kind, std::size_t IdN,
          std::size_t VersionN>
constexpr auto make_identity_note(const char (&id)[IdN], const char (&version)[VersionN]) {
  constexpr std::size_t kSize = note_json_size(Major, Minor, "", Kind::kName, "") + (IdN - 1) +
                                (VersionN - 1);
  IdentityNote<kSize> note{};
  note.namesz = sizeof kNoteName;
  note.descsz = static_cast<std::uint32_t>(kSize);
  note.type = kNoteType;
  for (std::size_t i = 0; i < sizeof kNoteName; ++i) note.name[i] = kNoteName[i];
  Appender writer{note.desc, 0};
  append_note_json(writer, Major, Minor, id, Kind::kName, version);
  // Remaining bytes stay zero: ELF note padding.
  return note;
}

}  // namespace ctx::sdk::internal

// Emits the identity note object (one per plugin; internal linkage, kept by `used`, aligned to 4 so
// the compiler never pads it into the note segment). Prefer CTX_PLUGIN, which calls this.
#define CTX_SDK_INTERNAL_EMIT_NOTE(KindTag, id, version, major, minor)                        \
  static_assert(::ctx::sdk::internal::is_valid_id(id),                                        \
                "ctx plugin id must match [a-z0-9][a-z0-9._-]{0,63}");                        \
  static_assert(::ctx::sdk::internal::is_valid_version(version),                              \
                "ctx plugin version must be a semantic version MAJOR.MINOR.PATCH");           \
  __attribute__((section(".note.ctx.plugin"), used, aligned(4))) static constexpr auto        \
      ctx_plugin_identity_note =                                                              \
          ::ctx::sdk::internal::make_identity_note<(major), (minor), KindTag>(id, version);  \
  static_assert(sizeof(ctx_plugin_identity_note) % 4 == 0, "ctx identity note is not padded")

#endif  // CTX_SDK_INTERNAL_NOTE_HPP_
