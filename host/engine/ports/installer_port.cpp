#include "host/engine/ports/installer_port.hpp"

#include <limits>
#include <string>

#include <ctx/sdk/error.hpp>

namespace ctx::engine {
namespace {

template <typename T>
T unsigned_field(const core::Json& value, const char* name) {
  const auto it = value.find(name);
  if (it == value.end() || !it->is_number_unsigned() ||
      it->get<std::uint64_t>() > std::numeric_limits<T>::max()) {
    throw InvalidArgument(std::string("target identity field \"") + name +
                          "\" must be an unsigned integer");
  }
  return static_cast<T>(it->get<std::uint64_t>());
}

}  // namespace

core::Json TargetIdentity::to_json() const {
  return core::Json{{"device", device}, {"inode", inode}, {"mode", mode},
                    {"owner", owner},   {"path", path}};
}

std::string TargetIdentity::digest() const { return core::canonical_digest(to_json()); }

TargetIdentity TargetIdentity::from_json(const core::Json& value) {
  if (!value.is_object()) throw InvalidArgument("target identity must be a json object");
  TargetIdentity identity;
  identity.device = unsigned_field<std::uint64_t>(value, "device");
  identity.inode = unsigned_field<std::uint64_t>(value, "inode");
  identity.owner = unsigned_field<std::uint32_t>(value, "owner");
  identity.mode = unsigned_field<std::uint32_t>(value, "mode");
  const auto path = value.find("path");
  if (path == value.end() || !path->is_string() || path->get<std::string>().empty()) {
    throw InvalidArgument("target identity field \"path\" must be a non-empty string");
  }
  identity.path = path->get<std::string>();
  return identity;
}

}  // namespace ctx::engine
