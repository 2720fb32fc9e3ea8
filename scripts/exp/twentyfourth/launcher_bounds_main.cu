// Calls tirc build's launcher of launcher_bounds.tir with n = 64 (runs, B =
// 2 A) and n = 100 (refused: cudaErrorInvalidValue, nothing written).
#include <cstdio>
#include <cuda_runtime.h>
#include "f.h"
int main() {
  float h[64], *a, *b;
  for (int i = 0; i < 64; i++) h[i] = 0.5f * i + 1;
  cudaMalloc(&a, 64 * 4); cudaMalloc(&b, 64 * 4);
  cudaMemcpy(a, h, 64 * 4, cudaMemcpyHostToDevice);
  cudaMemset(b, 0, 64 * 4);
  cudaError_t e64 = f_launch(a, b, 64, 0);
  cudaDeviceSynchronize();
  float r[64];
  cudaMemcpy(r, b, 64 * 4, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < 64; i++) bad += r[i] != 2 * h[i];
  cudaError_t e100 = f_launch(a, b, 100, 0);
  printf("n=64: %s, %d wrong; n=100: %s\n", cudaGetErrorName(e64), bad, cudaGetErrorName(e100));
  return !(e64 == cudaSuccess && bad == 0 && e100 == cudaErrorInvalidValue);
}
