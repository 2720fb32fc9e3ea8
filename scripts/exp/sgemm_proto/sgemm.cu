// Hand-written float32 SGEMM prototype for issue 14: how fast can a CUDA-core
// kernel get on this GPU, against cuBLAS in the same process? The classic
// design: 128x128 block tiles of 256 threads, each thread 8x8 values of C as
// 2x2 sub-tiles of 4x4 that are 64 apart (so a warp's shared reads are
// broadcasts or conflict-free 128-bit loads), A stored k-major in shared
// memory, tiles double-buffered through registers, fragments double-buffered.
// nvcc -O3 -arch=sm_90 sgemm.cu -lcublas -DBK=8
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cublas_v2.h>
#ifndef BK
#define BK 8
#endif
#ifndef MINB
#define MINB 2
#endif
#ifndef TMS
#define TMS 2
#endif
#ifndef TNS
#define TNS 2
#endif
// A thread's tile is TMS x TNS sub-tiles of 4x4, 64 rows / columns apart.
constexpr int BM = 64 * TMS, BN = 64 * TNS, NT = 256;
constexpr int FM = 4 * TMS, FN = 4 * TNS;

__global__ void __launch_bounds__(NT, MINB)
sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[2][BK][BM];
  __shared__ __align__(16) float Bs[2][BK][BN];
  int t = threadIdx.x;
  int ty = t / 16, tx = t % 16;
  int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  // global load assignment
  constexpr int A_PER = BM * BK / NT / 4;   // float4 loads a thread for A
  constexpr int B_PER = BK * BN / NT / 4;
  float4 ra[A_PER], rb[B_PER];
  const float* Ab = A + (size_t)bm * K;
  const float* Bb = B + bn;
  auto gload = [&](int k0) {
#pragma unroll
    for (int p = 0; p < A_PER; ++p) {
      int idx = t + p * NT;            // idx over BM * BK/4
      int row = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
      ra[p] = *reinterpret_cast<const float4*>(Ab + (size_t)row * K + k0 + kc);
    }
#pragma unroll
    for (int p = 0; p < B_PER; ++p) {
      int idx = t + p * NT;
      int k = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      rb[p] = *reinterpret_cast<const float4*>(Bb + (size_t)(k0 + k) * N + c);
    }
  };
  auto sstore = [&](int s) {
#pragma unroll
    for (int p = 0; p < A_PER; ++p) {
      int idx = t + p * NT;
      int row = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
      As[s][kc + 0][row] = ra[p].x; As[s][kc + 1][row] = ra[p].y;
      As[s][kc + 2][row] = ra[p].z; As[s][kc + 3][row] = ra[p].w;
    }
#pragma unroll
    for (int p = 0; p < B_PER; ++p) {
      int idx = t + p * NT;
      int k = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&Bs[s][k][c]) = rb[p];
    }
  };
  float acc[FM][FN] = {};
  float fa[2][FM], fb[2][FN];
  gload(0); sstore(0); __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    bool more = k0 + BK < K;
    if (more) gload(k0 + BK);
    auto frag = [&](int buf, int kk) {
#pragma unroll
      for (int q = 0; q < TMS; ++q)
        *reinterpret_cast<float4*>(&fa[buf][4 * q]) = *reinterpret_cast<const float4*>(&As[s][kk][64 * q + ty * 4]);
#pragma unroll
      for (int q = 0; q < TNS; ++q)
        *reinterpret_cast<float4*>(&fb[buf][4 * q]) = *reinterpret_cast<const float4*>(&Bs[s][kk][64 * q + tx * 4]);
    };
    frag(0, 0);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (kk + 1 < BK) frag((kk + 1) & 1, kk + 1);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) acc[i][j] += fa[kk & 1][i] * fb[kk & 1][j];
    }
    if (more) { sstore(s ^ 1); __syncthreads(); s ^= 1; }
  }
#pragma unroll
  for (int i = 0; i < FM; ++i) {
    int r = bm + (i / 4) * 64 + ty * 4 + i % 4;
#pragma unroll
    for (int h = 0; h < TNS; ++h) {
      int c = bn + h * 64 + tx * 4;
      *reinterpret_cast<float4*>(C + (size_t)r * N + c) = make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    }
  }
}

template <class F> float med(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f();
  std::vector<float> ts;
  for (int i = 0; i < 30; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float t; cudaEventElapsedTime(&t, a, b); ts.push_back(t); }
  std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}

int main(int argc, char** argv) {
  int S = argc > 1 ? atoi(argv[1]) : 4096;
  int M = S, N = S, K = S;
  std::vector<float> hA((size_t)M * K), hB((size_t)K * N);
  srand(7);
  for (auto& x : hA) x = rand() / (float)RAND_MAX * 2 - 1;
  for (auto& x : hB) x = rand() / (float)RAND_MAX * 2 - 1;
  float *A, *B, *C, *R;
  cudaMalloc(&A, hA.size() * 4); cudaMalloc(&B, hB.size() * 4);
  cudaMalloc(&C, (size_t)M * N * 4); cudaMalloc(&R, (size_t)M * N * 4);
  cudaMemcpy(A, hA.data(), hA.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(B, hB.data(), hB.size() * 4, cudaMemcpyHostToDevice);
  cublasHandle_t h; cublasCreate(&h);
  float one = 1, zero = 0;
  auto cub = [&] { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, R, N); };
  dim3 grid(N / BN, M / BM);
  auto mine = [&] { sgemm<<<grid, NT>>>(A, B, C, M, N, K); };
  float tc = med(cub), tm = med(mine);
  cudaFuncAttributes at; cudaFuncGetAttributes(&at, sgemm);
  std::vector<float> hC((size_t)M * N), hR((size_t)M * N);
  cudaMemcpy(hC.data(), C, hC.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(hR.data(), R, hR.size() * 4, cudaMemcpyDeviceToHost);
  double md = 0; for (size_t i = 0; i < hC.size(); ++i) md = std::max(md, (double)fabsf(hC[i] - hR[i]));
  double fl = 2.0 * M * N * K;
  printf("S=%d TMS=%d TNS=%d BK=%d MINB=%d regs=%d  cublas %.4f ms (%.1f TF)  proto %.4f ms (%.1f TF)  %.3fx  maxdiff %.2e  %s\n", S, TMS, TNS, BK, MINB, at.numRegs,
         tc, fl / tc / 1e9, tm, fl / tm / 1e9, tc / tm, md, cudaGetErrorString(cudaGetLastError()));
}
