#include "nn/linalg.hpp"

#include <xtensor-blas/xblas.hpp>

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

}  // namespace attn::nn
