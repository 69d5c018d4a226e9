#include <ctx/loader/errors.hpp>

namespace ctx::plugins {

PluginDigestMismatch::PluginDigestMismatch(const std::string& plugin, const std::string& expected,
                                           const std::string& actual)
    : PluginError(
          "digest mismatch for plugin " + plugin + ": expected " + expected + " got " + actual,
          ErrorCode::kDataLoss),
      expected_(expected),
      actual_(actual) {}

}  // namespace ctx::plugins
