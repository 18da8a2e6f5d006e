// Precompiled for the libraries of many files that all parse xtensor (meson.build, cpp_pch): the
// third-party headers they share, compiled once per library instead of once per file; also by
// `attn grade --sources` for a student's files. Only headers from outside the project, so that
// editing our own never rebuilds it. No fmt: the exercised functions print nothing, and without it
// the header compiles a fifth faster.
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>
