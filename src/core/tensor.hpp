// Mat/Vec aliases over xtensor and shape checks that name the tensor.
#pragma once

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

using Mat = xt::xtensor<double, 2>;
using Vec = xt::xtensor<double, 1>;
using Array = xt::xarray<double>;
using Shape = std::vector<std::size_t>;

// Thrown when an op receives a tensor of the wrong shape; the message names the tensor.
struct ShapeError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// "[3, 4]"
std::string shape_string(const Shape& shape);

template <class E>
Shape shape_of(const E& e) {
    return Shape(e.shape().begin(), e.shape().end());
}

// Throws ShapeError "<what>: expected [..], got [..]" when the shapes differ. A check that passes
// allocates nothing (training calls these checks in every step): the shapes are compared where they
// are, and the message is built only when it is thrown.
[[noreturn]] void throw_shape_error(std::string_view what, const Shape& actual, const Shape& expected);

void expect_shape(std::string_view what, const Shape& actual, const Shape& expected);

template <class E, class S>
void expect_shape_as(std::string_view what, const E& e, const S& expected) {
    const auto& actual = e.shape();
    if (actual.size() != expected.size() || !std::equal(expected.begin(), expected.end(), actual.begin()))
        throw_shape_error(what, shape_of(e), Shape(expected.begin(), expected.end()));
}

// (E: a tensor or an expression, anything with a shape(); a Shape itself takes the overload above)
template <class E, class = decltype(std::declval<const E&>().shape())>
void expect_shape(std::string_view what, const E& e, const Shape& expected) {
    expect_shape_as(what, e, expected);
}

template <class E, class = decltype(std::declval<const E&>().shape())>
void expect_shape(std::string_view what, const E& e, std::initializer_list<std::size_t> expected) {
    expect_shape_as(what, e, expected);
}

// Largest |a - b| over all elements; equal infinities differ by 0, NaN anywhere else gives
// NaN (so a check built on it fails). Throws ShapeError when the shapes differ.
double max_abs_difference(const Array& a, const Array& b);

// True when every row (the last axis) is a probability distribution: entries in [0, 1] and each
// row summing to 1 within 1e-9, or all 0 (a fully masked row); for a matrix, also when every
// column is (attention weights shown one column per query). Heatmaps shade such a tensor on the
// fixed scale 0 to 1, so that weights of 0.14 to 0.26 do not look like a solid column.
bool rows_are_distributions(const Array& values);

}  // namespace attn
