// Simulated cuBLAS / cuBLASLt: every GEMM entry point takes
// 2*b*m*n*k / 100 TFLOP/s on its stream, and the cuBLASLt descriptors
// give back what was set (a hook reads m, n, k, batch and dtype from them).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <functional>

#include "tests/simgpu/sim_ext.h"

namespace {

// Default XPU_TIMER_SIM_TFLOPS: 100 TFLOP/s = 1e5 flop/ns.
double expected_ms(double m, double n, double k, double batch) {
  return 2.0 * batch * m * n * k / 1e14 * 1e3;
}

class GemmTimingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&start_), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&end_), cudaSuccess);
    ASSERT_EQ(cublasCreate(&blas_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetStream(blas_, stream_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtCreate(&lt_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    cublasLtDestroy(lt_);
    cublasDestroy(blas_);
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
    cudaStreamDestroy(stream_);
  }
  // Runs `issue` between two events and returns the elapsed milliseconds.
  // A gate kernel first keeps the stream busy while the host issues the
  // rest, so host scheduling delays on a loaded machine cannot open gaps.
  float time_ms(const std::function<void()>& issue) {
    EXPECT_EQ(xpu_sim_launch_kernel(stream_, 30000000), cudaSuccess);
    EXPECT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
    issue();
    EXPECT_EQ(cudaEventRecord(end_, stream_), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(end_), cudaSuccess);
    float ms = -1;
    EXPECT_EQ(cudaEventElapsedTime(&ms, start_, end_), cudaSuccess);
    return ms;
  }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  float alpha_ = 1, beta_ = 0;
  float buf_[16] = {};
};

TEST_F(GemmTimingTest, GemmExTakesFlopsOverThroughput) {
  const int m = 8192, n = 4096, k = 8192;
  const float ms = time_ms([&] {
    ASSERT_EQ(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha_, buf_, CUDA_R_16BF, m,
                           buf_, CUDA_R_16BF, k, &beta_, buf_, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
  });
  EXPECT_NEAR(ms, expected_ms(m, n, k, 1), expected_ms(m, n, k, 1) * 0.02);
}

TEST_F(GemmTimingTest, BatchedEntryPointsScaleWithBatch) {
  const int m = 8192, n = 8192, k = 8192, b = 4;
  const double want = expected_ms(m, n, k, b);
  float ms = time_ms([&] {
    ASSERT_EQ(
        cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha_, buf_,
                                   CUDA_R_16F, k, 0, buf_, CUDA_R_16F, k, 0, &beta_, buf_,
                                   CUDA_R_16F, m, 0, b, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        CUBLAS_STATUS_SUCCESS);
  });
  EXPECT_NEAR(ms, want, want * 0.02);
  ms = time_ms([&] {
    ASSERT_EQ(cublasSgemmStridedBatched(blas_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha_, buf_, m,
                                        0, buf_, k, 0, &beta_, buf_, m, 0, b),
              CUBLAS_STATUS_SUCCESS);
  });
  EXPECT_NEAR(ms, want, want * 0.02);
  const __half* h = reinterpret_cast<const __half*>(buf_);
  __half* ho = reinterpret_cast<__half*>(buf_);
  ms = time_ms([&] {
    ASSERT_EQ(cublasHgemmStridedBatched(blas_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, h, h, m, 0, h, k,
                                        0, h, ho, m, 0, b),
              CUBLAS_STATUS_SUCCESS);
  });
  EXPECT_NEAR(ms, want, want * 0.02);
  const double single = expected_ms(m, n, k, 1);
  ms = time_ms([&] {
    ASSERT_EQ(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha_, buf_, m, buf_, k,
                          &beta_, buf_, m),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasHgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, h, h, m, h, k, h, ho, m),
              CUBLAS_STATUS_SUCCESS);
  });
  EXPECT_NEAR(ms, 2 * single, 2 * single * 0.02);
}

TEST_F(GemmTimingTest, InvalidLeadingDimensionIsRejected) {
  EXPECT_EQ(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha_, buf_, CUDA_R_32F, 8,
                         buf_, CUDA_R_32F, 64, &beta_, buf_, CUDA_R_32F, 64, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha_, buf_, CUDA_R_32F,
                         64, buf_, CUDA_R_32F, 64, &beta_, buf_, CUDA_R_32F, 64, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_INITIALIZED);
  cudaStream_t got = nullptr;
  ASSERT_EQ(cublasGetStream(blas_, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, stream_);
}

TEST_F(GemmTimingTest, LtMatmulReadsShapeFromLayoutsAndTransposes) {
  const uint64_t m = 4096, n = 2048, k = 8192;
  const int32_t batch = 3;
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const int32_t transa = CUBLAS_OP_T;
  ASSERT_EQ(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)),
      CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, k, m, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, k, n, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, m, n, m), CUBLAS_STATUS_SUCCESS);
  const int64_t stride = static_cast<int64_t>(m * n);
  for (auto l : {a, b, d}) {
    ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                               sizeof(batch)),
              CUBLAS_STATUS_SUCCESS);
  }
  ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof(stride)),
            CUBLAS_STATUS_SUCCESS);
  // Read back as a hook would.
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, got_stride = 0;
  int32_t got_batch = 0, order = -1;
  uint32_t type = 0;
  int32_t got_transa = -1;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(a, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof(rows),
                                             &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof(rows));
  cublasLtMatrixLayoutGetAttribute(a, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols), &written);
  cublasLtMatrixLayoutGetAttribute(a, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof(ld), &written);
  cublasLtMatrixLayoutGetAttribute(a, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof(type), &written);
  cublasLtMatrixLayoutGetAttribute(a, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order),
                                   &written);
  cublasLtMatrixLayoutGetAttribute(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &got_batch,
                                   sizeof(got_batch), &written);
  cublasLtMatrixLayoutGetAttribute(d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &got_stride,
                                   sizeof(got_stride), &written);
  cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &got_transa, sizeof(got_transa),
                                 &written);
  EXPECT_EQ(rows, k);
  EXPECT_EQ(cols, m);
  EXPECT_EQ(ld, static_cast<int64_t>(k));
  EXPECT_EQ(type, static_cast<uint32_t>(CUDA_R_16BF));
  EXPECT_EQ(order, CUBLASLT_ORDER_COL);
  EXPECT_EQ(got_batch, batch);
  EXPECT_EQ(got_stride, stride);
  EXPECT_EQ(got_transa, CUBLAS_OP_T);
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(a, CUBLASLT_MATRIX_LAYOUT_ROWS, &batch, sizeof(batch)),
            CUBLAS_STATUS_INVALID_VALUE);  // wrong size for a uint64_t attribute

  cublasLtMatmulPreference_t pref = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(lt_, desc, a, b, d, d, pref, 4, &result, &found),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(found, 1);
  const float ms = time_ms([&] {
    ASSERT_EQ(cublasLtMatmul(lt_, desc, &alpha_, buf_, a, buf_, b, &beta_, buf_, d, buf_, d,
                             &result.algo, nullptr, 0, stream_),
              CUBLAS_STATUS_SUCCESS);
  });
  const double want = expected_ms(m, n, k, batch);
  EXPECT_NEAR(ms, want, want * 0.02);

  // Caller-owned descriptors (cublasLt*Init) work the same way.
  cublasLtMatrixLayoutOpaque_t owned;
  ASSERT_EQ(cublasLtMatrixLayoutInit(&owned, CUDA_R_32F, 7, 9, 7), CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayoutGetAttribute(&owned, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols),
                                   &written);
  EXPECT_EQ(cols, 9u);

  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatmulDescDestroy(desc);
}

}  // namespace
