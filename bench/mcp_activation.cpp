// MCP activation cost, as a ratio against its irreducible part measured on the same disk in the
// same run:
//   raw: rewriting the host config file atomically with the bytes an activation produces and
//        then with the bytes a deactivation restores (temporary file, write, fsync, rename,
//        directory fsync: two rewrites);
//   mcp: McpStore::activate then McpStore::deactivate of an installed server (lock, read, parse,
//        text edit, parse again, ownership record, atomic replace with the changed-file check),
//        for a Claude Code JSON file (~/.claude.json-like, 40 KiB) and a Codex config.toml with
//        comments.
// Prints `ratio mcp_activation_json/raw: X` and `ratio mcp_activation_toml/raw: X` (medians;
// target <= 3). Files go to $CTX_BENCH_DIR (default: the system temp directory).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "plugins/common/bytes.hpp"
#include "plugins/mcp-installer/core/mcp_store.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

std::map<std::string, std::vector<double>> g_samples;

const std::string kServer =
    R"({"name":"github","description":"GitHub","command":"npx","args":["-y",)"
    R"("@modelcontextprotocol/server-github"],"env":{"GITHUB_PERSONAL_ACCESS_TOKEN":"x"}})";

fs::path bench_dir(const char* name) {
  const char* env = std::getenv("CTX_BENCH_DIR");
  const fs::path base = env != nullptr ? fs::path(env) : fs::temp_directory_path();
  std::string pattern = (base / (std::string("ctx-bench-") + name + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void write(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary) << bytes;
}

// What a long-used ~/.claude.json looks like: many projects with their own settings.
std::string claude_json() {
  Json document = {{"numStartups", 212}, {"theme", "dark"}, {"projects", Json::object()}};
  for (int i = 0; i < 120; ++i) {
    document["projects"]["/home/u/src/project-" + std::to_string(i)] = {
        {"allowedTools", Json::array({"Bash(git status)", "Read"})},
        {"history", Json::array({"fix the tests", "add a PDF export"})},
        {"mcpServers", Json::object()},
        {"hasTrustDialogAccepted", true}};
  }
  document["mcpServers"] = {{"mine", {{"type", "stdio"}, {"command", "/usr/bin/mine"}}}};
  return document.dump(2) + "\n";
}

std::string codex_toml() {
  std::string text = "# my codex settings\nmodel = \"gpt-5\"  # default model\n\n";
  for (int i = 0; i < 20; ++i) {
    text += "[profiles.p" + std::to_string(i) + "]\nmodel = \"gpt-5-mini\"  # fast\n\n";
  }
  return text + "[mcp_servers.mine]\ncommand = \"/usr/bin/mine\"\n";
}

void raw_rewrite(const fs::path& file, const std::string& bytes) {
  const fs::path temp = file.parent_path() / ".raw-tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      ::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(temp.c_str(), file.c_str()) != 0) {
    std::abort();
  }
  const int dir = ::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ::fsync(dir);
  ::close(dir);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void run(benchmark::State& state, const char* format, const char* file_name,
         const std::string& original) {
  const fs::path dir = bench_dir("mcp-activation");
  const fs::path file = dir / "host" / file_name;
  fs::create_directories(file.parent_path());
  write(file, original);
  ctx::mcp_installer::McpStore store(Json{
      {"root", (dir / "state").string()},
      {"config_file", file.string()},
      {"format", format}}.dump());
  const std::string digest = ctx::plugin_common::sha256_hex(kServer);
  const std::string id = "mcp-server:github";
  if (store
          .install(
              Json{{"capability_id", id}, {"content", kServer}, {"content_sha256", digest}}.dump())
          .value("outcome", "") != "applied") {
    std::abort();
  }
  const std::string activate = Json{{"capability_id", id}, {"content_sha256", digest}}.dump();
  const std::string deactivate = Json{{"capability_id", id}}.dump();
  // The bytes an activation writes, for the raw baseline.
  if (store.activate(activate).value("outcome", "") != "applied") std::abort();
  const std::string active = read(file);
  if (store.deactivate(deactivate).value("outcome", "") != "applied") std::abort();
  const fs::path raw_file = dir / "host" / (std::string("raw-") + file_name);
  write(raw_file, original);
  for (auto _ : state) {
    auto start = Clock::now();
    if (store.activate(activate).value("outcome", "") != "applied") std::abort();
    if (store.deactivate(deactivate).value("outcome", "") != "applied") std::abort();
    g_samples[format].push_back(seconds_since(start));
    start = Clock::now();
    raw_rewrite(raw_file, active);
    raw_rewrite(raw_file, original);
    g_samples[std::string("raw_") + format].push_back(seconds_since(start));
  }
  if (read(file) != original) std::abort();  // deactivation restored the bytes
  fs::remove_all(dir);
}

void BM_McpActivationJson(benchmark::State& state) {
  run(state, "json", ".claude.json", claude_json());
}
void BM_McpActivationToml(benchmark::State& state) {
  run(state, "toml", "config.toml", codex_toml());
}
BENCHMARK(BM_McpActivationJson)->Iterations(31)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_McpActivationToml)->Iterations(31)->Unit(benchmark::kMillisecond);

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  for (const char* format : {"json", "toml"}) {
    const double mcp = median(g_samples[format]);
    const double raw = median(g_samples[std::string("raw_") + format]);
    std::printf("mcp_activation_%s_p50_us: %.1f\nraw_rewrites_%s_p50_us: %.1f\n", format, mcp * 1e6,
                format, raw * 1e6);
    std::printf("ratio mcp_activation_%s/raw: %.2f\n", format, raw > 0 ? mcp / raw : 0.0);
  }
  return 0;
}
