// Catch2 for kforge's tests, whichever major version the system ships: Debian 12 has Catch2 v2
// (one header), Ubuntu 24.04 has v3 (split headers, renamed matchers). Tests include this file and
// use Catch::Contains/Equals/StartsWith and Approx the v2 way.
#pragma once

#if __has_include(<catch2/catch.hpp>)
#include <catch2/catch.hpp>
#else
#include <catch2/catch_approx.hpp>
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>

namespace Catch {
inline auto Contains(const std::string& text) { return Matchers::ContainsSubstring(text); }
inline auto Equals(const std::string& text) { return Matchers::Equals(text); }
inline auto StartsWith(const std::string& text) { return Matchers::StartsWith(text); }
inline auto EndsWith(const std::string& text) { return Matchers::EndsWith(text); }
} // namespace Catch
using Catch::Approx;
#endif
