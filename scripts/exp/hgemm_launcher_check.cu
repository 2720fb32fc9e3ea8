// Calls the launcher `tirc build` wrote for ir-examples/hgemm.tir's wgmma
// (warp-specialized: tensor maps encoded by the launcher) at 256 x 512 x 320
// and checks C against a host product.
// nvcc -gencode=arch=compute_90a,code=sm_90a -I BUILD hgemm_launcher_check.cu BUILD/hgemm.cu
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include <cuda_fp16.h>
#include "hgemm.h"

int main() {
  const int m = 256, n = 512, k = 320;
  std::vector<half> a(m * k), b(k * n);
  std::vector<float> c(m * n);
  for (auto& x : a) x = __float2half(rand() / (float)RAND_MAX - 0.5f);
  for (auto& x : b) x = __float2half(rand() / (float)RAND_MAX - 0.5f);
  half *da, *db;
  float* dc;
  cudaMalloc(&da, a.size() * 2); cudaMalloc(&db, b.size() * 2); cudaMalloc(&dc, c.size() * 4);
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  cudaError_t e = hgemm_launch(da, db, dc, 0);
  cudaError_t s = cudaDeviceSynchronize();
  cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) {
    double t = 0; for (int p = 0; p < k; p++) t += (double)__half2float(a[i * k + p]) * __half2float(b[p * n + j]);
    worst = fmax(worst, fabs(t - c[i * n + j]));
  }
  printf("launch %d (%s), sync %s, max abs error %.3g\n", (int)e, cudaGetErrorString(e), cudaGetErrorString(s), worst);
  return e != cudaSuccess || s != cudaSuccess || worst > 1e-2;
}
