// Calls a tirc kernel from a CUDA C++ program: `tirc build` wrote
// matmul.cu and matmul.h (see docs/export.md); this file fills A and B,
// runs matmul_launch on a stream, and checks C against a product on the CPU.
//
//   tirc build ir-examples/matmul.tir -s step6_async -D M=1000 -D N=1100 -D K=999 -o build/
//   nvcc -O3 -arch=sm_90 -std=c++17 -Ibuild -DSIZE_M=1000 -DSIZE_N=1100 -DSIZE_K=999 docs/export/main.cu build/matmul.cu -o matmul
//   ./matmul
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "matmul.h"

// The sizes the kernel was built for (-D of tirc build), given to nvcc as
// SIZE_M, SIZE_N and SIZE_K: the -D flags reach matmul.cu too, so names as
// short as N would clash with its code.
constexpr int M = SIZE_M, N = SIZE_N, K = SIZE_K;
// A kernel built from a function of run-time M (`m = T.int32()`, as in
// ir-examples/matmul_dynamic.tir) takes it after the buffers.
#ifdef RUNTIME_M
#define LAUNCH(a, b, c, s) matmul_launch(a, b, c, M, s)
#else
#define LAUNCH(a, b, c, s) matmul_launch(a, b, c, s)
#endif

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e = (call);                                                           \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main() {
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N);
  srand(7);
  for (float& x : a) x = rand() / float(RAND_MAX) - 0.5f;
  for (float& x : b) x = rand() / float(RAND_MAX) - 0.5f;
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(LAUNCH(da, db, dc, stream));
  CHECK(cudaStreamSynchronize(stream));
  // Time it: ten launches between two events.
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < 10; ++i) CHECK(LAUNCH(da, db, dc, stream));
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double diff2 = 0, ref2 = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += double(a[size_t(i) * K + k]) * b[size_t(k) * N + j];
      double d = c[size_t(i) * N + j] - s;
      diff2 += d * d;
      ref2 += s * s;
    }
  double rel = std::sqrt(diff2 / ref2);
  std::printf("matmul_launch %dx%dx%d: %.4f ms per call, %.1f GFLOPS, rel_err %.3e\n", M, N, K, ms / 10,
              2.0 * M * N * K / (ms / 10 * 1e6), rel);
  return rel < 1e-5 ? 0 : 1;
}
