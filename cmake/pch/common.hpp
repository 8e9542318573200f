// Precompiled once and used by every layer library (cmake/KforgeLayers.cmake): the standard and
// third-party headers that most of kforge's files include. Parsing nlohmann/json, fmt and <regex>
// again in each of some 250 files was most of a build's time. Only system headers belong here, so
// that no layer sees another's declarations through it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
