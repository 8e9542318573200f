// Precompiled for the cli layer and kforge_bench: the common set plus CLI11.
#pragma once

#include "common.hpp"

#include <CLI/CLI.hpp>
