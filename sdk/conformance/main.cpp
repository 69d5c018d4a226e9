// ctx-conformance PLUGIN.so [--config FILE]: runs the conformance kit on one plugin.
#include "ctx/conformance/conformance.hpp"

int main(int argc, char** argv) { return ctx::conformance::run_main(argc, argv); }
