// A program built with DT_RPATH (see CMakeLists.txt) that pins and loads one plugin, to show
// what the loader does about its host program's own search path. Usage:
//   ctx_loader_rpath_probe PLUGIN STATE_DIR   prints "ok" (exit 0) or "error: <what>" (exit 1)
#include <cstdio>
#include <ctx/loader/plugin_loader.hpp>
#include <exception>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  try {
    const ctx::plugins::PluginLoader loader(argv[2]);
    const auto plugin = loader.load(loader.inspect_for_pin(argv[1]));
    std::printf("ok %s\n", plugin->identity().id.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
