// Precompiled for the test program (tests/meson.build): the headers nearly every test file parses,
// Catch2's above all, compiled once instead of once per file.

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>
