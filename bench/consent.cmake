# ctx_bench_consent: resolve_consent end to end (decode, verifier registry, the real ed25519
# verifier module, broker, journal, install through the real skill-installer module) vs one raw
# Ed25519 verify (OpenSSL EVP) plus one SQLite commit at the journal's synchronous level.
if(TARGET ctx_plugin_ed25519 AND TARGET ctx_plugin_skill_installer)
  add_executable(ctx_bench_consent ${CMAKE_CURRENT_LIST_DIR}/consent.cpp)
  target_link_libraries(ctx_bench_consent PRIVATE ctx::runtime ctx::app SQLite::SQLite3
                                                  OpenSSL::Crypto benchmark::benchmark
                                                  ctx::warnings)
  target_include_directories(ctx_bench_consent PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(ctx_bench_consent PRIVATE
    CTX_CONSENT_ED25519_SO="$<TARGET_FILE:ctx_plugin_ed25519>"
    CTX_SKILL_INSTALLER_SO="$<TARGET_FILE:ctx_plugin_skill_installer>")
  add_dependencies(ctx_bench_consent ctx_plugin_ed25519 ctx_plugin_skill_installer)
endif()
