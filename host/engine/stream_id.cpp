#include "host/engine/stream_id.hpp"

#include <utility>

#include "host/core/canonical_json.hpp"
#include "host/engine/canonical_text.hpp"
#include "host/core/error.hpp"

namespace ctx::engine {
namespace {

bool is_space(unsigned char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void require_trimmed(const std::string& value, const char* field) {
  if (value.empty() || is_space(static_cast<unsigned char>(value.front())) ||
      is_space(static_cast<unsigned char>(value.back()))) {
    throw InvalidArgument(std::string(field) + " must be a non-empty trimmed string");
  }
}

}  // namespace

StreamId::StreamId(std::string tenant_id, std::string workspace_id, std::string repository_id,
                   std::string session_id)
    : tenant_id_(std::move(tenant_id)),
      workspace_id_(std::move(workspace_id)),
      repository_id_(std::move(repository_id)),
      session_id_(std::move(session_id)) {
  require_trimmed(tenant_id_, "tenant_id");
  require_trimmed(workspace_id_, "workspace_id");
  require_trimmed(repository_id_, "repository_id");
  require_trimmed(session_id_, "session_id");
  try {
    stream_key_ = CanonicalObject()
                      .string("repository_id", repository_id_)
                      .string("session_id", session_id_)
                      .string("tenant_id", tenant_id_)
                      .string("workspace_id", workspace_id_)
                      .finish();
  } catch (const InvalidArgument&) {
    throw InvalidArgument("stream id fields must be non-empty trimmed strings of valid utf-8");
  }
}

StreamId StreamId::from_stream_key(std::string_view key) {
  core::Json value = core::parse_canonical_json(key);
  if (!value.is_object() || value.size() != 4) {
    throw InvalidArgument("stream key must be an object of exactly four fields");
  }
  auto field = [&](const char* name) -> std::string {
    auto it = value.find(name);
    if (it == value.end() || !it->is_string()) {
      throw InvalidArgument(std::string("stream key is missing ") + name);
    }
    return it->get<std::string>();
  };
  return StreamId(field("tenant_id"), field("workspace_id"), field("repository_id"),
                  field("session_id"));
}

}  // namespace ctx::engine
