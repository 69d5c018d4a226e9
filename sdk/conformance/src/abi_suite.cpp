// The generic ABI suite: what every plugin must satisfy, whatever its kind.
#include <gtest/gtest.h>

#include <cstring>
#include <ctx/loader/plugin_identity.hpp>
#include <ctx/support/canonical_json.hpp>
#include <ctx/support/digest.hpp>
#include <ctx/support/text.hpp>
#include <fstream>
#include <sstream>
#include <vector>

#include "sdk/conformance/src/plugin_under_test.hpp"

namespace ctx::conformance::detail {
namespace {

namespace fs = std::filesystem;
using plugins::PluginKind;

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The bytes the host reads through a descriptor: the struct, its strings and its ops table.
std::string descriptor_image(const ctx_plugin_descriptor& d) {
  std::string image(reinterpret_cast<const char*>(&d), sizeof d);
  image += d.id != nullptr ? d.id : "<null>";
  image += '\0';
  image += d.version != nullptr ? d.version : "<null>";
  if (d.ops != nullptr) {
    std::uint32_t size = 0;
    std::memcpy(&size, d.ops, sizeof size);
    image.append(static_cast<const char*>(d.ops), size);
  }
  return image;
}

// The 1.0 size of the ops table of `kind`.
std::size_t ops_size(PluginKind kind) {
  switch (kind) {
    case PluginKind::kInstaller:  // install_from_source (minor 1) is optional
      return offsetof(ctx_installer_ops, install_from_source);
    case PluginKind::kVerifier:
      return sizeof(ctx_verifier_ops);
    case PluginKind::kHostAdapter:
      return sizeof(ctx_host_adapter_ops);
  }
  return 0;
}

// Every JSON-taking op of the plugin's kind, callable on an instance with one payload. The call
// is named with the payload's size, so a plugin that dies on one input is told which.
struct JsonOp {
  std::string name;
  std::function<CallResult(void* instance, const std::string& input)> call;
};

ctx_bytes bytes_of(const std::string& text) {
  return ctx_bytes{reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

CallResult call_with_sink(const std::string& name,
                          const std::function<ctx_code(ctx_sink*, ctx_error*)>& op,
                          ctx_code refusal = CTX_OK) {
  Sink sink(refusal);
  CallResult result = invoke(name, [&](ctx_error* err) { return op(sink.get(), err); });
  result.output = sink.text();
  return result;
}

std::string sized(const std::string& op, const std::string& input) {
  return op + " of a malformed input of " + std::to_string(input.size()) + " bytes";
}

std::vector<JsonOp> json_ops(const PluginUnderTest& plugin) {
  std::vector<JsonOp> ops;
  const auto add_sink_op = [&](const char* name, auto fn) {
    ops.push_back({name, [name, fn](void* instance, const std::string& input) {
                     return call_with_sink(sized(name, input), [&](ctx_sink* out, ctx_error* err) {
                       return fn(instance, bytes_of(input), out, err);
                     });
                   }});
  };
  switch (plugin.kind()) {
    case PluginKind::kInstaller: {
      const ctx_installer_ops& t = *plugin.loaded().installer_ops();
      add_sink_op("install", t.install);
      add_sink_op("activate", t.activate);
      add_sink_op("deactivate", t.deactivate);
      add_sink_op("reconcile", t.reconcile);
      break;
    }
    case PluginKind::kHostAdapter: {
      const ctx_host_adapter_ops& t = *plugin.loaded().host_adapter_ops();
      add_sink_op("parse_hook", t.parse_hook);
      add_sink_op("render_reply", t.render_reply);
      break;
    }
    case PluginKind::kVerifier: {
      const auto verify = plugin.loaded().verifier_ops()->verify;
      ops.push_back({"verify", [verify](void* instance, const std::string& input) {
                       std::uint32_t verdict = kVerdictUnset;
                       const std::string signing = "ctx-conformance signing bytes";
                       CallResult r = invoke(sized("verify", input), [&](ctx_error* err) {
                         return verify(instance, bytes_of(input), bytes_of(signing), &verdict, err);
                       });
                       r.verdict = verdict;
                       return r;
                     }});
      break;
    }
  }
  return ops;
}

}  // namespace

void register_abi_suite(const std::shared_ptr<PluginUnderTest>& plugin) {
  add_plugin_test(plugin, "Pinning", "LockEntryPinsTheExactFileAndDeclaredIdentity", [plugin] {
    const plugins::LockEntry& entry = plugin->entry();
    const std::string bytes = file_bytes(plugin->plugin_path());
    EXPECT_EQ(entry.sha256, support::sha256_hex(bytes));
    EXPECT_EQ(entry.size, bytes.size());
    EXPECT_EQ(plugin->loaded().identity(), entry.identity());
    EXPECT_EQ(fs::weakly_canonical(entry.path), fs::weakly_canonical(plugin->plugin_path()));
    const ctx_plugin_descriptor& d = plugin->descriptor();
    EXPECT_EQ(entry.id, d.id);
    EXPECT_EQ(entry.version, d.version);
    EXPECT_EQ(static_cast<std::uint32_t>(entry.kind), d.kind);
    EXPECT_EQ(entry.abi_major, d.abi_major);
    EXPECT_EQ(entry.abi_minor, d.abi_minor_required) << "the lock pins the minor the note requires";
  });

  add_plugin_test(plugin, "Descriptor", "IsWellFormed", [plugin] {
    const ctx_plugin_descriptor& d = plugin->descriptor();
    EXPECT_EQ(d.abi_major, CTX_ABI_MAJOR);
    EXPECT_GE(d.struct_size, sizeof(ctx_plugin_descriptor))
        << "the descriptor is smaller than ABI " << CTX_ABI_MAJOR << ".0's";
    EXPECT_TRUE(plugins::is_known_kind(d.kind)) << "kind " << d.kind;
    ASSERT_NE(d.id, nullptr);
    EXPECT_TRUE(plugins::is_valid_plugin_id(d.id)) << "id \"" << d.id << "\"";
    ASSERT_NE(d.version, nullptr);
    EXPECT_TRUE(plugins::is_valid_semver(d.version)) << "version \"" << d.version << "\"";
    EXPECT_NE(d.create, nullptr);
    EXPECT_NE(d.destroy, nullptr);
  });

  add_plugin_test(plugin, "Descriptor", "OpsTableCoversItsKind", [plugin] {
    const ctx_plugin_descriptor& d = plugin->descriptor();
    ASSERT_NE(d.ops, nullptr);
    std::uint32_t size = 0;
    std::memcpy(&size, d.ops, sizeof size);
    EXPECT_GE(size, ops_size(plugin->kind()))
        << "the ops table is smaller than ABI " << CTX_ABI_MAJOR << ".0's for its kind";
    switch (plugin->kind()) {
      case PluginKind::kInstaller: {
        const ctx_installer_ops& t = *plugin->loaded().installer_ops();
        EXPECT_NE(t.target_identity, nullptr);
        EXPECT_NE(t.install, nullptr);
        EXPECT_NE(t.activate, nullptr);
        EXPECT_NE(t.deactivate, nullptr);
        EXPECT_NE(t.reconcile, nullptr);
        break;
      }
      case PluginKind::kVerifier:
        EXPECT_NE(plugin->loaded().verifier_ops()->verify, nullptr);
        break;
      case PluginKind::kHostAdapter: {
        const ctx_host_adapter_ops& t = *plugin->loaded().host_adapter_ops();
        EXPECT_NE(t.parse_hook, nullptr);
        EXPECT_NE(t.render_reply, nullptr);
        break;
      }
    }
  });

  add_plugin_test(plugin, "VersionRule", "RequiredMinorIsNotAboveBuiltMinor", [plugin] {
    const ctx_plugin_descriptor& d = plugin->descriptor();
    EXPECT_LE(d.abi_minor_required, d.abi_minor_built)
        << "a plugin cannot require ABI " << d.abi_major << "." << d.abi_minor_required
        << " while built against " << d.abi_major << "." << d.abi_minor_built;
  });

  add_plugin_test(plugin, "Negotiation", "LoadingLeftNoTraces", [plugin] {
    EXPECT_EQ(plugin->sandbox_now(), plugin->sandbox_before_load())
        << "loading the plugin (static constructors, entry) created files in the working "
           "directory";
  });

  add_plugin_test(plugin, "Negotiation", "IsRepeatableAndSideEffectFree", [plugin] {
    const ctx_plugin_descriptor* loaded = &plugin->descriptor();
    const std::string image = descriptor_image(*loaded);
    const ctx_host_negotiation host = plugins::host_negotiation();
    // The host's own offer, then offers the plugin cannot satisfy: entry must not adapt to them.
    const std::vector<ctx_host_negotiation> offers = {
        host,
        host,
        {sizeof(ctx_host_negotiation), CTX_ABI_MAJOR + 1, 0, 0},
        {sizeof(ctx_host_negotiation), CTX_ABI_MAJOR, 0, 0},
        {sizeof(ctx_host_negotiation), CTX_ABI_MAJOR, 7, 9},
        {0, 0, 0, 0},
    };
    plugin->in_sandbox([&] {
      for (int round = 0; round < 50; ++round) {
        for (const ctx_host_negotiation& offer : offers) {
          const ctx_plugin_descriptor* answered = nullptr;
          {
            const CallScope scope("ctx_plugin_entry");
            answered = plugin->entry_function()(&offer);
          }
          EXPECT_EQ(answered, loaded)
              << "ctx_plugin_entry returned another descriptor (offer major " << offer.abi_major
              << ", minors " << offer.abi_minor_min << ".." << offer.abi_minor_max << ")";
        }
      }
    });
    EXPECT_EQ(descriptor_image(*loaded), image) << "negotiation changed the descriptor";
    EXPECT_EQ(plugin->sandbox_now(), plugin->sandbox_before_load())
        << "negotiation created files in the working directory";
  });

  add_plugin_test(plugin, "Lifecycle", "CreateAndDestroyPair", [plugin] {
    for (int round = 0; round < 3; ++round) {
      std::vector<std::unique_ptr<RawInstance>> instances;
      for (int i = 0; i < 4; ++i) {
        instances.push_back(std::make_unique<RawInstance>(*plugin, plugin->fresh_config()));
        const CallResult& created = instances.back()->created();
        ASSERT_EQ(created.code, CTX_OK) << "create failed: " << created.message;
        EXPECT_TRUE(created.error_untouched) << "create succeeded but wrote into the error buffer";
        ASSERT_NE(instances.back()->handle(), nullptr) << "create returned a null instance";
        for (std::size_t j = 0; j + 1 < instances.size(); ++j) {
          EXPECT_NE(instances[j]->handle(), instances.back()->handle())
              << "two live instances share a handle";
        }
      }
      for (auto& instance : instances) {
        const CallResult destroyed = instance->destroy();
        EXPECT_EQ(destroyed.code, CTX_OK) << "destroy failed: " << destroyed.message;
        EXPECT_TRUE(destroyed.error_untouched)
            << "destroy succeeded but wrote into the error buffer";
      }
    }
  });

  add_plugin_test(plugin, "Lifecycle", "BadConfigFailsWithACode", [plugin] {
    const ctx_plugin_descriptor& d = plugin->descriptor();
    for (const std::string& config : garbage_inputs()) {
      const Contained call = contain([&] {
        void* instance = nullptr;
        CallResult created = invoke("create", [&](ctx_error* err) {
          return d.create(plugin->host_api(), bytes_of(config), &instance, err);
        });
        if (created.code == CTX_OK && instance != nullptr) {
          const CallResult destroyed =
              invoke("destroy", [&](ctx_error* err) { return d.destroy(instance, err); });
          if (destroyed.code != CTX_OK) return destroyed;
        } else if (created.code != CTX_OK && instance != nullptr) {
          created.output = "instance set on failure";
        } else if (created.code == CTX_OK) {
          created.output = "null instance on success";
        }
        return created;
      });
      const std::string what =
          "create with a malformed config (" + std::to_string(config.size()) + " bytes)";
      expect_contained_code(*plugin, call, what);
      EXPECT_EQ(call.result.output, "") << what;
    }
  });

  add_plugin_test(plugin, "Guards", "GarbageInputReturnsACode", [plugin] {
    RawInstance instance(*plugin, plugin->fresh_config());
    ASSERT_EQ(instance.created().code, CTX_OK) << "create failed: " << instance.created().message;
    for (const JsonOp& op : json_ops(*plugin)) {
      for (const std::string& input : garbage_inputs()) {
        const Contained call = contain([&] { return op.call(instance.handle(), input); });
        const std::string what =
            op.name + " with malformed input (" + std::to_string(input.size()) + " bytes)";
        expect_contained_code(*plugin, call, what);
        if (plugin->kind() == PluginKind::kVerifier) {
          EXPECT_NE(call.result.verdict, CTX_VERDICT_ACCEPTED)
              << what << " wrote CTX_VERDICT_ACCEPTED (code " << call.result.code << ")";
        }
      }
    }
    EXPECT_EQ(instance.destroy().code, CTX_OK);
  });

  if (plugin->kind() != PluginKind::kVerifier) {
    add_plugin_test(plugin, "Guards", "RefusedSinkWriteIsReturned", [plugin] {
      RawInstance instance(*plugin, plugin->fresh_config());
      ASSERT_EQ(instance.created().code, CTX_OK) << "create failed: " << instance.created().message;
      void* handle = instance.handle();
      std::vector<std::pair<std::string, std::function<ctx_code(ctx_sink*, ctx_error*)>>> calls;
      const std::string reconcile = R"({"capabilities":[]})";
      const std::string payload = R"({"hook_event_name":"SessionStart","session_id":"s-1"})";
      const std::string reply = R"({"actions":[]})";
      if (plugin->kind() == PluginKind::kInstaller) {
        const ctx_installer_ops& t = *plugin->loaded().installer_ops();
        calls.emplace_back("target_identity", [&t, handle](ctx_sink* out, ctx_error* err) {
          return t.target_identity(handle, out, err);
        });
        calls.emplace_back("reconcile", [&](ctx_sink* out, ctx_error* err) {
          return t.reconcile(handle, bytes_of(reconcile), out, err);
        });
      } else {
        const ctx_host_adapter_ops& t = *plugin->loaded().host_adapter_ops();
        calls.emplace_back("parse_hook", [&](ctx_sink* out, ctx_error* err) {
          return t.parse_hook(handle, bytes_of(payload), out, err);
        });
        calls.emplace_back("render_reply", [&](ctx_sink* out, ctx_error* err) {
          return t.render_reply(handle, bytes_of(reply), out, err);
        });
      }
      for (const auto& named : calls) {
        const auto& op = named.second;
        const Contained call =
            contain([&] { return call_with_sink(named.first, op, CTX_RESOURCE_EXHAUSTED); });
        ASSERT_EQ(call.ending, Contained::Ending::kReturned)
            << named.first << " " << call.describe();
        EXPECT_EQ(call.result.code, CTX_RESOURCE_EXHAUSTED)
            << named.first << " must return the sink's refusal code unchanged";
      }
    });
  }
}

}  // namespace ctx::conformance::detail
