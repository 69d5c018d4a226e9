#include "plugins/mcp-installer/core/json_text.hpp"

#include <ctx/sdk/error.hpp>

#include "plugins/common/json_input.hpp"

namespace ctx::mcp_installer {
namespace {

bool is_ws(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_ws(std::string_view text, std::size_t at) {
  while (at < text.size() && is_ws(text[at])) ++at;
  return at;
}

[[noreturn]] void malformed() { throw InvalidArgument("json text is malformed"); }

// Offset after the string starting at `at` ('"').
std::size_t skip_string(std::string_view text, std::size_t at) {
  if (at >= text.size() || text[at] != '"') malformed();
  for (++at; at < text.size(); ++at) {
    if (text[at] == '\\') {
      ++at;
    } else if (text[at] == '"') {
      return at + 1;
    }
  }
  malformed();
}

std::size_t skip_value(std::string_view text, std::size_t at);

std::size_t skip_container(std::string_view text, std::size_t at, char close) {
  at = skip_ws(text, at + 1);
  if (at < text.size() && text[at] == close) return at + 1;
  for (;;) {
    if (close == '}') {
      at = skip_ws(text, skip_string(text, at));
      if (at >= text.size() || text[at] != ':') malformed();
      at = skip_ws(text, at + 1);
    }
    at = skip_ws(text, skip_value(text, at));
    if (at >= text.size()) malformed();
    if (text[at] == close) return at + 1;
    if (text[at] != ',') malformed();
    at = skip_ws(text, at + 1);
  }
}

std::size_t skip_value(std::string_view text, std::size_t at) {
  if (at >= text.size()) malformed();
  switch (text[at]) {
    case '{':
      return skip_container(text, at, '}');
    case '[':
      return skip_container(text, at, ']');
    case '"':
      return skip_string(text, at);
    default:
      break;
  }
  const std::size_t begin = at;
  while (at < text.size() && !is_ws(text[at]) && text[at] != ',' && text[at] != '}' &&
         text[at] != ']') {
    ++at;
  }
  if (at == begin) malformed();
  return at;
}

// The whitespace at the start of the line holding `at`.
std::string_view line_indent(std::string_view text, std::size_t at) {
  std::size_t start = text.rfind('\n', at);
  start = start == std::string_view::npos ? 0 : start + 1;
  std::size_t end = start;
  while (end < text.size() && (text[end] == ' ' || text[end] == '\t')) ++end;
  return text.substr(start, end - start);
}

std::string quoted(std::string_view key) { return nlohmann::json(std::string(key)).dump(); }

// `value` pretty-printed with `unit` per level, continuation lines prefixed by `indent`, lines
// joined with `eol`.
std::string indented(const nlohmann::ordered_json& value, std::string_view unit,
                     std::string_view indent, std::string_view eol) {
  const char fill = !unit.empty() && unit.front() == '\t' ? '\t' : ' ';
  const std::string dumped = value.dump(static_cast<int>(unit.size()), fill, false);
  std::string out;
  for (const char c : dumped) {
    if (c == '\n') {
      out += eol;
      out += indent;
    } else {
      out += c;
    }
  }
  return out;
}

std::string_view eol_of(std::string_view text) {
  return text.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";
}

}  // namespace

const JsonMember* JsonObjectSpan::find(std::string_view key) const {
  for (const JsonMember& member : members) {
    if (member.key == key) return &member;
  }
  return nullptr;
}

std::size_t top_level_object(std::string_view text) {
  std::size_t at = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  at = skip_ws(text, at);
  return at < text.size() && text[at] == '{' ? at : std::string_view::npos;
}

JsonObjectSpan scan_object(std::string_view text, std::size_t open) {
  if (open >= text.size() || text[open] != '{') malformed();
  JsonObjectSpan span;
  span.open = open;
  std::size_t at = skip_ws(text, open + 1);
  if (at < text.size() && text[at] == '}') {
    span.close = at;
    return span;
  }
  for (;;) {
    JsonMember member;
    member.key_begin = at;
    member.key_end = skip_string(text, at);
    try {
      member.key = nlohmann::json::parse(text.substr(at, member.key_end - at)).get<std::string>();
    } catch (const nlohmann::json::exception&) {
      malformed();
    }
    at = skip_ws(text, member.key_end);
    if (at >= text.size() || text[at] != ':') malformed();
    member.value_begin = skip_ws(text, at + 1);
    member.value_end = skip_value(text, member.value_begin);
    span.members.push_back(std::move(member));
    at = skip_ws(text, span.members.back().value_end);
    if (at >= text.size()) malformed();
    if (text[at] == '}') {
      span.close = at;
      return span;
    }
    if (text[at] != ',') malformed();
    at = skip_ws(text, at + 1);
  }
}

std::string insert_member(std::string_view text, const JsonObjectSpan& object, std::string_view key,
                          const nlohmann::ordered_json& value) {
  std::string out(text);
  if (!object.members.empty()) {
    const JsonMember& last = object.members.back();
    std::size_t ws_begin = last.key_begin;
    while (ws_begin > 0 && is_ws(text[ws_begin - 1])) --ws_begin;
    const std::string_view ws = text.substr(ws_begin, last.key_begin - ws_begin);
    const std::string_view separator = text.substr(last.key_end, last.value_begin - last.key_end);
    std::string value_text;
    const std::size_t newline = ws.rfind('\n');
    if (newline == std::string_view::npos) {
      value_text = value.dump();
    } else {
      const std::string_view indent = ws.substr(newline + 1);
      const std::string_view base = line_indent(text, object.open);
      std::string unit(indent.size() > base.size() ? indent.size() - base.size() : 2,
                       !indent.empty() && indent.front() == '\t' ? '\t' : ' ');
      value_text = indented(value, unit, indent, eol_of(ws));
    }
    // Appended, not "," + ... (GCC 12 -O3 reports a false -Wrestrict in operator+ here).
    std::string member = ",";
    member += ws;
    member += quoted(key);
    member += separator;
    member += value_text;
    out.insert(last.value_end, member);
    return out;
  }
  // An empty object: laid out on its own lines, one level deeper than the line of its '{'.
  const std::string_view eol = eol_of(text);
  const std::string base(line_indent(text, object.open));
  std::string unit = "  ";
  const bool compact = text.find('\n') == std::string_view::npos && text.size() > 2;
  std::string inside;
  if (compact) {
    inside = quoted(key) + ":" + value.dump();
  } else {
    const std::string indent = base + unit;
    inside = std::string(eol) + indent + quoted(key) + ": " + indented(value, unit, indent, eol) +
             std::string(eol) + base;
  }
  out.replace(object.open + 1, object.close - object.open - 1, inside);
  return out;
}

std::string replace_member_value(std::string_view text, const JsonMember& member,
                                 const nlohmann::ordered_json& value) {
  std::string out(text);
  std::string value_text;
  if (text.find('\n') == std::string_view::npos) {
    value_text = value.dump();
  } else {
    value_text = indented(value, "  ", line_indent(text, member.key_begin), eol_of(text));
  }
  out.replace(member.value_begin, member.value_end - member.value_begin, value_text);
  return out;
}

std::string remove_member(std::string_view text, const JsonObjectSpan& object, std::size_t index,
                          std::string_view inside_when_empty) {
  std::string out(text);
  const auto& members = object.members;
  if (index >= members.size()) throw InvalidArgument("json member index out of range");
  if (members.size() == 1) {
    out.replace(object.open + 1, object.close - object.open - 1, inside_when_empty);
  } else if (index + 1 == members.size()) {
    const std::size_t begin = members[index - 1].value_end;
    out.erase(begin, members[index].value_end - begin);
  } else {
    const std::size_t begin = members[index].key_begin;
    out.erase(begin, members[index + 1].key_begin - begin);
  }
  return out;
}

bool only_object_changed(std::string_view before, std::string_view after,
                         const JsonObjectSpan& object, const nlohmann::json& expect) {
  const std::string_view head = before.substr(0, object.open);
  const std::string_view tail = before.substr(object.close + 1);
  if (after.size() < head.size() + tail.size() || after.substr(0, head.size()) != head ||
      after.substr(after.size() - tail.size()) != tail) {
    return false;
  }
  try {
    return plugin_common::parse_object(
               after.substr(head.size(), after.size() - head.size() - tail.size()), "edit") ==
           expect;
  } catch (const InvalidArgument&) {
    return false;
  }
}

}  // namespace ctx::mcp_installer
