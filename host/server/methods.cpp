// The JSON-RPC methods that exist today, and `ctx serve`.
#include <exception>
#include <ostream>

#include "host/plugins/lock_file.hpp"
#include "host/server/server.hpp"

namespace ctx::server {

namespace fs = std::filesystem;

namespace {

// plugin.list: no params (absent, {} or []). Result: {"plugins":[{kind,id,version,sha256,size,
// abi:{major,minor},platform,needed}]} in the lock's (kind, id) order; paths are never sent.
core::Json plugin_list(const fs::path& lock_path, const core::Json& params) {
  if (!params.is_null() && !params.empty()) {
    throw InvalidParams("plugin.list takes no params");
  }
  const plugins::LockFile lock = plugins::LockFile::load_or_empty(lock_path);
  core::Json list = core::Json::array();
  for (const plugins::LockEntry& entry : lock.entries()) {
    list.push_back({{"kind", plugins::kind_name(entry.kind)},
                    {"id", entry.id},
                    {"version", entry.version},
                    {"sha256", entry.sha256},
                    {"size", entry.size},
                    {"abi", {{"major", entry.abi_major}, {"minor", entry.abi_minor}}},
                    {"platform", entry.platform},
                    {"needed", entry.needed}});
  }
  return core::Json{{"plugins", std::move(list)}};
}

}  // namespace

void register_builtin_methods(MethodTable& table, const fs::path& state_dir) {
  table.add("plugin.list", [lock_path = state_dir / "plugins.lock.json"](const core::Json& params) {
    return plugin_list(lock_path, params);
  });
}

int serve(const fs::path& state_dir, std::ostream& log, std::ostream& err) {
  try {
    MethodTable table;
    register_builtin_methods(table, state_dir);
    ServerOptions options;
    options.state_dir = state_dir;
    options.handle_signals = true;
    options.log = &log;
    Server server(std::move(options), std::move(table));
    server.run();
    return 0;
  } catch (const std::exception& e) {
    std::string message = e.what();
    for (char& c : message) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    err << "ctx serve: " << message << "\n";
    return 1;
  }
}

}  // namespace ctx::server
