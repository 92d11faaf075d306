// The one Catch2 main every test executable links, compiled once into a
// static library instead of once per test file (Catch2 v2's main is the
// slowest part of the header to compile).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
