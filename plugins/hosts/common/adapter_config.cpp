#include "plugins/hosts/common/adapter_config.hpp"

#include <ctx/sdk/error.hpp>

#include "plugins/hosts/common/hook_input.hpp"

namespace ctx::host_adapters {

AdapterConfig read_adapter_config(std::string_view text, std::string_view what,
                                  const std::set<std::string, std::less<>>& allowed) {
  AdapterConfig config;
  if (text.empty()) return config;
  const std::string name = std::string(what) + " config";
  const Json object = read_json_object(text, name);
  for (const auto& [key, value] : object.items()) {
    if (allowed.count(key) == 0) throw InvalidArgument(name + " has an unknown member");
    if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
      throw InvalidArgument(name + " " + key + " must be a non-empty string");
    }
    const std::string& text_value = value.get_ref<const std::string&>();
    if (key == "installation_key") {
      config.installation_key = parse_installation_key(text_value, name);
    } else if (key == "tenant_id") {
      if (!is_engine_token(text_value)) throw InvalidArgument(name + " tenant_id is not a token");
      config.tenant_id = text_value;
    } else if (key == "home" || key == "project_dir" || key == "config_dir") {
      if (text_value.front() != '/') {
        throw InvalidArgument(name + " " + key + " must be an absolute directory");
      }
      (key == "home"          ? config.home
       : key == "project_dir" ? config.project_dir
                              : config.config_dir) = text_value;
    } else if (key == "scope") {
      if (text_value != "project" && text_value != "user") {
        throw InvalidArgument(name + " scope must be \"project\" or \"user\"");
      }
      config.user_scope = text_value == "user";
    } else if (key == "skills_dir") {
      config.skills_dir = text_value;
    } else {
      throw InvalidArgument(name + " has an unknown member");
    }
  }
  return config;
}

const std::string& require_installation_key(const AdapterConfig& config, std::string_view what) {
  if (!config.installation_key) {
    throw Error(std::string(what) + " has no installation_key in its config",
                ErrorCode::kFailedPrecondition);
  }
  return *config.installation_key;
}

}  // namespace ctx::host_adapters
