// StreamId: the revision authority of one session (tenant, workspace, repository, session).
// Exposure and host context are not part of it, so parent and child agents share one stream,
// one revision counter and one active budget. Immutable value; thread-safe.
#ifndef CTX_HOST_ENGINE_STREAM_ID_HPP_
#define CTX_HOST_ENGINE_STREAM_ID_HPP_

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace ctx::engine {

// A journal revision: 0 = empty stream, the first record is revision 1.
using Revision = std::int64_t;

class StreamId {
 public:
  // Errors: InvalidArgument "<field> must be a non-empty trimmed string" (empty, leading or
  // trailing whitespace, or not valid UTF-8).
  StreamId(std::string tenant_id, std::string workspace_id, std::string repository_id,
           std::string session_id);

  // Parses a stream_key() text back. Errors: InvalidArgument when `key` is not the canonical
  // four-key object stream_key() produces.
  static StreamId from_stream_key(std::string_view key);

  const std::string& tenant_id() const noexcept { return tenant_id_; }
  const std::string& workspace_id() const noexcept { return workspace_id_; }
  const std::string& repository_id() const noexcept { return repository_id_; }
  const std::string& session_id() const noexcept { return session_id_; }

  // canon-U of {"repository_id","session_id","tenant_id","workspace_id"}: the persisted key.
  const std::string& stream_key() const noexcept { return stream_key_; }

  friend bool operator==(const StreamId& a, const StreamId& b) noexcept {
    return a.stream_key_ == b.stream_key_;
  }
  friend std::strong_ordering operator<=>(const StreamId& a, const StreamId& b) noexcept {
    return a.stream_key_ <=> b.stream_key_;
  }

 private:
  std::string tenant_id_;
  std::string workspace_id_;
  std::string repository_id_;
  std::string session_id_;
  std::string stream_key_;
};

}  // namespace ctx::engine

#endif  // CTX_HOST_ENGINE_STREAM_ID_HPP_
