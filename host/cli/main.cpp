// ctx: the host's command-line entry point (see host/cli/cli.hpp).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"
#include "host/core/crypto.hpp"

int main(int argc, char** argv) {
  try {
    ctx::core::init_crypto_without_config();  // no OpenSSL module ctx did not pin
  } catch (const std::exception& e) {
    std::cerr << "ctx: " << e.what() << "\n";
    return 1;
  }
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return ctx::cli::run(args, std::cout, std::cerr, ctx::cli::Environment::from_process());
}
