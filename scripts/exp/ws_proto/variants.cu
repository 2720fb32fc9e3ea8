// tirc's warp-specialized wgmma kernel (hgemm.tir, wgmma, 4096³) and edits
// of it, timed against cuBLAS in one process; variants.sh generates them.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "v_prelude.cuh"
#define hgemm_kernel v0
#include "v0.cuh"
#undef hgemm_kernel
#define hgemm_kernel v1
#include "v1.cuh"
#undef hgemm_kernel
#define hgemm_kernel v2
#include "v2.cuh"
#undef hgemm_kernel

static CUtensorMap make_map(const half* p, int inner, int outer, int bi, int bo) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer}, strides[1] = {(cuuint64_t)inner * 2};
  cuuint32_t box[2] = {(cuuint32_t)bi, (cuuint32_t)bo}, es[2] = {1, 1};
  if (cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void*)p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)) exit(1);
  return m;
}
template <class F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f();
  std::vector<float> ts;
  for (int i = 0; i < 30; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float t; cudaEventElapsedTime(&t, a, b); ts.push_back(t); }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
int main() {
  const int S = 4096; size_t n = (size_t)S * S;
  std::vector<half> h(n); srand(7);
  for (auto& x : h) x = __float2half(rand() / (float)RAND_MAX - 0.5f);
  half *A, *B; float *C, *R;
  cudaMalloc(&A, n * 2); cudaMalloc(&B, n * 2); cudaMalloc(&C, n * 4); cudaMalloc(&R, n * 4);
  cudaMemcpy(A, h.data(), n * 2, cudaMemcpyHostToDevice); cudaMemcpy(B, h.data(), n * 2, cudaMemcpyHostToDevice);
  cublasHandle_t hd; cublasCreate(&hd); float one = 1, zero = 0;
  auto cub = [&] { cublasGemmEx(hd, CUBLAS_OP_N, CUBLAS_OP_N, S, S, S, &one, B, CUDA_R_16F, S, A, CUDA_R_16F, S, &zero, R, CUDA_R_32F, S, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
  CUtensorMap tA = make_map(A, S, S, 64, 128), tB = make_map(B, S, S, 64, 64);
  tirc_tensor_map mA, mB; memcpy(&mA, &tA, 128); memcpy(&mB, &tB, 128);
  const int smem = 196608 + 64;
  void (*ks[3])(const half*, const half*, float*, tirc_tensor_map, tirc_tensor_map) = {v0, v1, v2};
  cub(); cudaDeviceSynchronize();
  std::vector<float> r(n), c(n); cudaMemcpy(r.data(), R, n * 4, cudaMemcpyDeviceToHost);
  float tc = timeit(cub);
  for (int v = 0; v < 3; ++v) {
    cudaFuncSetAttribute(ks[v], cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    auto run = [&] { ks[v]<<<512, dim3(32, 12), smem>>>(A, B, C, mA, mB); };
    cudaMemset(C, 0, n * 4); run();
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(c.data(), C, n * 4, cudaMemcpyDeviceToHost);
    double md = 0; for (size_t i = 0; i < n; ++i) md = std::max(md, (double)fabs(c[i] - r[i]));
    float t = timeit(run);
    printf("v%d: %s %.4f ms, cublas %.4f ms, %.3fx, maxdiff %.2e\n", v, cudaGetErrorString(e), t, tc, tc / t, md);
  }
  printf("cublas again %.4f ms\n", timeit(cub));
}
