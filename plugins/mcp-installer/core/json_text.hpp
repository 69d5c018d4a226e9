// Byte-preserving edits of JSON text: the spans of an object's members, inserting one member
// (laid out like its siblings: same separator, indentation and line ending) and removing one,
// leaving every other byte of the text as it was. Removing a member that insert_member added
// restores the text byte for byte. Pure functions over text the caller validated as JSON.
#ifndef CTX_PLUGINS_MCP_INSTALLER_CORE_JSON_TEXT_HPP_
#define CTX_PLUGINS_MCP_INSTALLER_CORE_JSON_TEXT_HPP_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ctx::mcp_installer {

struct JsonMember {
  std::string key;                             // decoded
  std::size_t key_begin = 0, key_end = 0;      // the quoted key
  std::size_t value_begin = 0, value_end = 0;  // the value
};

struct JsonObjectSpan {
  std::size_t open = 0, close = 0;  // offsets of '{' and '}'
  std::vector<JsonMember> members;
  // The member named `key`, or nullptr.
  const JsonMember* find(std::string_view key) const;
};

// The offset of the top-level '{' (after a UTF-8 byte order mark and whitespace), or npos when
// the text's value is not an object. REQUIRES: `text` is valid JSON.
std::size_t top_level_object(std::string_view text);

// The spans of the object whose '{' is at `open`. Errors: InvalidArgument when the text is not
// JSON there (a caller bug or unvalidated text).
JsonObjectSpan scan_object(std::string_view text, std::size_t open);

// `text` with member `key`: `value` appended as the object's last member.
std::string insert_member(std::string_view text, const JsonObjectSpan& object, std::string_view key,
                          const nlohmann::ordered_json& value);

// `text` with the value of `member` replaced by `value`, laid out at the member's indentation.
std::string replace_member_value(std::string_view text, const JsonMember& member,
                                 const nlohmann::ordered_json& value);

// `text` without the object's member `index`; when it was the only member, the object's inside
// becomes `inside_when_empty` (what insert_member replaced, normally "").
std::string remove_member(std::string_view text, const JsonObjectSpan& object, std::size_t index,
                          std::string_view inside_when_empty = "");

// Whether `after` differs from `before` only inside the object at `object`: every byte before its
// '{' and after its '}' is kept, and what stands between them in `after` is one JSON object (no
// repeated key) equal to `expect`. The rest being the same bytes, `after` is as valid as `before`
// and keeps all its other values; checking this costs the object's size, not the file's.
bool only_object_changed(std::string_view before, std::string_view after,
                         const JsonObjectSpan& object, const nlohmann::json& expect);

}  // namespace ctx::mcp_installer

#endif  // CTX_PLUGINS_MCP_INSTALLER_CORE_JSON_TEXT_HPP_
