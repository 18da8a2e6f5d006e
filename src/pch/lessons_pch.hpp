// Precompiled for the lessons (meson.build, cpp_pch): what every exercised function's file shares
// (xtensor_pch.hpp), and fmt, which the lessons print with and the exercised functions do not.
// Only headers from outside the project, so that editing our own never rebuilds it.
#include "xtensor_pch.hpp"

#include <fmt/format.h>
