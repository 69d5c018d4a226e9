// This project's conformance test: the ctx kit's suites, linked as a library.
#include <ctx/conformance/conformance.hpp>

int main(int argc, char** argv) { return ctx::conformance::run_main(argc, argv); }
