// Precompiled for the test binary: the common set plus Catch2 (through tests/kf_catch.hpp, which
// picks v2 or v3). tests/main.cpp, which configures Catch2 before including it, is built without.
#pragma once

#include "common.hpp"

#include "kf_catch.hpp"
