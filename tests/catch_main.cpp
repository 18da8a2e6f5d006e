// Catch2 v2's main and implementation, at the head of the first unity file of the tests (tests/meson.build).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
