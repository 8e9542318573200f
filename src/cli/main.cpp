// kforge's entry point: everything else is library code the tests link.
#include "cli/app.hpp"
#include "util/contain.hpp"

int main(int argc, char** argv)
{
    // `kforge __keep PROGRAM ...`: the keeper of a program kforge runs for a user (util/contain.hpp).
    if (auto keeper = kforge::run_keeper_if_asked(argc, argv))
        return *keeper;
    return kforge::run_cli(argc, argv);
}
