// ctx: the host's command-line entry point (see host/cli/cli.hpp).
#include <iostream>
#include <string>
#include <vector>

#include "host/cli/cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return ctx::cli::run(args, std::cout, std::cerr, ctx::cli::Environment::from_process());
}
