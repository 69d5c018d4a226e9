// TOML text pieces the installers write by hand (so that an edit touches only ctx's own lines):
// basic and multi-line basic string literals and bare-key checks (TOML 1.0). Pure functions.
#ifndef CTX_PLUGINS_COMMON_TOML_TEXT_HPP_
#define CTX_PLUGINS_COMMON_TOML_TEXT_HPP_

#include <string>
#include <string_view>

namespace ctx::plugin_common {

// `text` as a TOML basic string: "..." with \\, \" and control characters escaped.
std::string toml_basic_string(std::string_view text);

// `text` as a TOML multi-line basic string ("""<newline>..."""): every
// backslash and quote escaped, control characters other than newline and tab escaped, so that
// the parsed value is `text` exactly (a CR is written as \r).
std::string toml_multiline_string(std::string_view text);

// True when `key` is a TOML bare key: [A-Za-z0-9_-]+.
bool is_toml_bare_key(std::string_view key) noexcept;

}  // namespace ctx::plugin_common

#endif  // CTX_PLUGINS_COMMON_TOML_TEXT_HPP_
