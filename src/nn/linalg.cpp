#include "nn/linalg.hpp"

#include <xtensor-blas/xblas.hpp>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

namespace attn::nn {

Mat matmul(const Mat& A, const Mat& B, const char* what) {
    if (A.shape(1) != B.shape(0))
        throw ShapeError(std::string(what) + ": cannot multiply " + shape_string(shape_of(A)) + " by " +
                         shape_string(shape_of(B)));
    // BLAS wants every leading dimension >= 1; an empty product is all zeros anyway.
    if (A.size() == 0 || B.size() == 0) return xt::zeros<double>({A.shape(0), B.shape(1)});
    // gemm straight into a Mat: xt::linalg::dot returns an xarray that would be copied again.
    Mat product = xt::empty<double>({A.shape(0), B.shape(1)});
    xt::blas::gemm(A, B, product);
    return product;
}

Mat gather_rows(const Mat& table, const std::vector<std::size_t>& ids) {
    Mat out = xt::empty<double>({ids.size(), table.shape(1)});
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= table.shape(0))
            throw ShapeError("row lookup: id " + std::to_string(ids[i]) + " is outside a table of " +
                             std::to_string(table.shape(0)) + " rows");
        xt::row(out, static_cast<std::ptrdiff_t>(i)) = xt::row(table, static_cast<std::ptrdiff_t>(ids[i]));
    }
    return out;
}

Mat transposed(const Mat& M) { return xt::eval(xt::transpose(M)); }

Mat linear_map_sending(const Mat& A, const Mat& B) {
    if (A.shape(0) != B.shape(0))
        throw ShapeError("linear map: " + shape_string(shape_of(A)) + " inputs and " + shape_string(shape_of(B)) +
                         " outputs must have as many rows");
    const Mat gram = matmul(A, transposed(A), "A A^T");
    const Mat solved = xt::linalg::solve(gram, A);
    return matmul(transposed(B), solved, "B^T (A A^T)^{-1} A");
}

}  // namespace attn::nn
