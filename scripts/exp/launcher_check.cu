// Calls the launcher `tirc build` wrote for ir-examples/linear_dynamic.tir
// (step6_async) at a run-time size no tile divides and checks C against a
// host product; then asks for a grid past CUDA's limits and expects an
// error, not a launch. nvcc -I BUILD launcher_check.cu BUILD/matmul.cu
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include "matmul.h"

int main() {
  const int m = 100, n = 70, k = 33;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (auto& x : a) x = rand() / (float)RAND_MAX - 0.5f;
  for (auto& x : b) x = rand() / (float)RAND_MAX - 0.5f;
  float *da, *db, *dc;
  cudaMalloc(&da, a.size() * 4); cudaMalloc(&db, b.size() * 4); cudaMalloc(&dc, c.size() * 4);
  cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
  cudaError_t e = matmul_launch(da, db, dc, m, n, k, 0);
  cudaDeviceSynchronize();
  cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) {
    double s = 0; for (int p = 0; p < k; p++) s += (double)a[i * k + p] * b[p * n + j];
    worst = fmax(worst, fabs(s - c[i * n + j]));
  }
  printf("launch %d (%s), max abs error %.3g\n", (int)e, cudaGetErrorString(e), worst);
  // m past 65535 tiles of 64 rows along y: refused before any launch.
  cudaError_t big = matmul_launch(da, db, dc, 4194305, 1, 1, 0);
  printf("m = 4194305: %d (%s)\n", (int)big, cudaGetErrorString(big));
  return (e == cudaSuccess && worst < 1e-4 && big == cudaErrorInvalidConfiguration) ? 0 : 1;
}
