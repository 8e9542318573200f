// kforge's entry point: everything else is library code the tests link.
#include "cli/app.hpp"

int main(int argc, char** argv) { return kforge::run_cli(argc, argv); }
