// Hand-written variants of the Step 2 kernel, to see what the generated
// code should look like. nvcc -O3 -arch=sm_90 step2_variants.cu -lcublas
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cublas_v2.h>
#define N 4096
// V0: what tirc emits now.
extern "C" __global__ void __launch_bounds__(32) v0(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll
    for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
    #pragma unroll
    for (int k = 0; k < 32; ++k)
      acc[i * 4 + j] += A[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + k0 * 32 + k] * B[(k0 * 32 + k) * N + blockIdx.y * 32 + threadIdx.y * 4 + j];
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
// V1: k outermost inside the tile (outer products), scalar loads.
extern "C" __global__ void __launch_bounds__(32) v1(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll
    for (int k = 0; k < 32; ++k)
    #pragma unroll
    for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
      acc[i * 4 + j] += A[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + k0 * 32 + k] * B[(k0 * 32 + k) * N + blockIdx.y * 32 + threadIdx.y * 4 + j];
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
// V2: float4 loads of A along k and of B along j.
extern "C" __global__ void __launch_bounds__(32) v2(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll
    for (int k4 = 0; k4 < 8; ++k4) {
      float4 a[8], b[4];
      #pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = *(const float4*)&A[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + k0 * 32 + k4 * 4];
      #pragma unroll
      for (int kk = 0; kk < 4; ++kk) b[kk] = *(const float4*)&B[(k0 * 32 + k4 * 4 + kk) * N + blockIdx.y * 32 + threadIdx.y * 4];
      #pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float* ai = (const float*)&a[i];
        #pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const float* bk = (const float*)&b[kk];
          #pragma unroll
          for (int j = 0; j < 4; ++j) acc[i * 4 + j] += ai[kk] * bk[j];
        }
      }
    }
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
// V3: V0 with __launch_bounds__(32, 16): at most 128 registers.
extern "C" __global__ void __launch_bounds__(32, 16) v3(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll
    for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
    #pragma unroll
    for (int k = 0; k < 32; ++k)
      acc[i * 4 + j] += A[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + k0 * 32 + k] * B[(k0 * 32 + k) * N + blockIdx.y * 32 + threadIdx.y * 4 + j];
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
// V4: V1 (outer products) with only the k loop unrolled by 4 (smaller code).
extern "C" __global__ void __launch_bounds__(32) v4(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll 4
    for (int k = 0; k < 32; ++k)
    #pragma unroll
    for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
      acc[i * 4 + j] += A[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + k0 * 32 + k] * B[(k0 * 32 + k) * N + blockIdx.y * 32 + threadIdx.y * 4 + j];
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
// V5: V2 with the B float4 only (A scalar).
extern "C" __global__ void __launch_bounds__(32) v5(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll
    for (int k = 0; k < 32; ++k) {
      float4 b = *(const float4*)&B[(k0 * 32 + k) * N + blockIdx.y * 32 + threadIdx.y * 4];
      const float* bk = (const float*)&b;
      #pragma unroll
      for (int i = 0; i < 8; ++i) {
        float a = A[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + k0 * 32 + k];
        #pragma unroll
        for (int j = 0; j < 4; ++j) acc[i * 4 + j] += a * bk[j];
      }
    }
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
#include "tirc_step2_4096.cu"
// V7: V0 with tirc's signed index arithmetic.
extern "C" __global__ void __launch_bounds__(32) v7(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll
    for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
    #pragma unroll
    for (int k = 0; k < 32; ++k)
      acc[i * 4 + j] += A[((int)blockIdx.x) * (32 * N) + ((int)threadIdx.x) * (8 * N) + i * N + k0 * 32 + k] * B[k0 * (32 * N) + k * N + ((int)blockIdx.y) * 32 + ((int)threadIdx.y) * 4 + j];
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
// V8: V7 with unsigned casts instead of int.
extern "C" __global__ void __launch_bounds__(32) v8(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int k0 = 0; k0 < N / 32; ++k0) {
    #pragma unroll
    for (int i = 0; i < 8; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
    #pragma unroll
    for (int k = 0; k < 32; ++k)
      acc[i * 4 + j] += A[(blockIdx.x) * (32 * N) + (threadIdx.x) * (8 * N) + i * N + k0 * 32 + k] * B[k0 * (32 * N) + k * N + (blockIdx.y) * 32 + (threadIdx.y) * 4 + j];
  }
  #pragma unroll
  for (int i = 0; i < 8; ++i)
  #pragma unroll
  for (int j = 0; j < 4; ++j) C[(blockIdx.x * 32 + threadIdx.x * 8 + i) * N + blockIdx.y * 32 + threadIdx.y * 4 + j] = acc[i * 4 + j];
}
typedef void (*K)(const float*, const float*, float*);
int main() {
  size_t n = (size_t)N * N;
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 1000) / 1000.f - 0.5f;
  float *A, *B, *C, *R;
  cudaMalloc(&A, n * 4); cudaMalloc(&B, n * 4); cudaMalloc(&C, n * 4); cudaMalloc(&R, n * 4);
  cudaMemcpy(A, h.data(), n * 4, cudaMemcpyHostToDevice);
  for (size_t i = 0; i < n; ++i) h[i] = (float)((i * 40503u + 7) % 997) / 997.f - 0.5f;
  cudaMemcpy(B, h.data(), n * 4, cudaMemcpyHostToDevice);
  cublasHandle_t hd; cublasCreate(&hd);
  float one = 1, zero = 0;
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto timeit = [&](auto f) {
    for (int i = 0; i < 5; ++i) f();
    std::vector<float> ts;
    for (int i = 0; i < 20; ++i) { cudaEventRecord(e0); f(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
  };
  // row-major C = A B  ==  column-major C^T = B^T A^T
  float tb = timeit([&] { cublasSgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, B, N, A, N, &zero, R, N); });
  double fl = 2.0 * N * N * N;
  printf("cublas %.3f ms %.1f TF\n", tb, fl / tb / 1e9);
  std::vector<float> hr(n), hc(n);
  cudaMemcpy(hr.data(), R, n * 4, cudaMemcpyDeviceToHost);
  K ks[] = {v0, v1, v2, v3, v4, v5, (K)matmul_kernel, v7, v8};
  const char* names[] = {"v0 current", "v1 k-outer", "v2 float4 A,B", "v3 lb(32,16)", "v4 k-outer unroll4", "v5 float4 B", "v6 tirc source", "v7 v0 signed", "v8 v0 unsigned flat"};
  for (int v = 0; v < 9; ++v) {
    cudaFuncAttributes at; cudaFuncGetAttributes(&at, ks[v]);
    cudaMemset(C, 0xff, n * 4);
    float t = timeit([&] { ks[v]<<<dim3(N / 32, N / 32), dim3(4, 8)>>>(A, B, C); });
    cudaMemcpy(hc.data(), C, n * 4, cudaMemcpyDeviceToHost);
    double md = 0; for (size_t i = 0; i < n; ++i) md = std::max(md, (double)fabs(hc[i] - hr[i]));
    printf("%-20s regs %3d  %.3f ms  %.2f TF  %.3fx cublas  maxdiff %.2e\n", names[v], at.numRegs, t, fl / t / 1e9, tb / t, md);
  }
}
