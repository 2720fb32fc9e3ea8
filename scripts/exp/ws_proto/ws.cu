// Prototype: a warp-specialized wgmma kernel fed by TMA through mbarriers,
// timed against tirc's current kernel and cuBLAS in one process.
// nvcc -O3 -gencode=arch=compute_90a,code=sm_90a ws.cu -lcublas -lcuda
#include <cuda.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "tirc_helpers.cuh"
#include "tirc_kernel.cuh"
#include "ws_wgmma.cuh"

#ifndef ST
#define ST 4
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
constexpr int BM = 128, BN = 256, BK = 64;
constexpr int A_ELEMS = BM * BK, B_ELEMS = BK * BN;
constexpr int SMEM = ST * (A_ELEMS + B_ELEMS) * 2 + 2 * ST * 8;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned phase) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(smem_addr(b)), "r"(phase) : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(b)) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tma2d(void* dst, const CUtensorMap* map, int x, int y, unsigned long long* bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(smem_addr(dst)), "l"((unsigned long long)map), "r"(x), "r"(y), "r"(smem_addr(bar)) : "memory");
}

extern "C" __global__ void __launch_bounds__(384, 1) ws_kernel(const __grid_constant__ CUtensorMap tA, const __grid_constant__ CUtensorMap tB, float* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  half* As = reinterpret_cast<half*>(smem);
  half* Bs = reinterpret_cast<half*>(smem + ST * A_ELEMS * 2);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + ST * (A_ELEMS + B_ELEMS) * 2);
  unsigned long long* empty = full + ST;
  int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < ST; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], 2); }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  int tiles_n = N / BN, tiles_m = M / BM, KT = K / BK;
  int ntiles = tiles_m * tiles_n;
  const int G = 8;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (tid == 0) {
      int it = 0;
      for (int t = blockIdx.x; t < ntiles; t += (PERSIST ? gridDim.x : ntiles)) {
        int grp = t / (G * tiles_n), r = t % (G * tiles_n);
        int m0 = (grp * G + r % G) * BM, n0 = (r / G) * BN;
        for (int kt = 0; kt < KT; ++kt, ++it) {
          int s = it % ST;
          if (it >= ST) mbar_wait(&empty[s], ((it / ST) - 1) & 1);
          mbar_expect_tx(&full[s], (A_ELEMS + B_ELEMS) * 2);
          tma2d(As + s * A_ELEMS, &tA, kt * BK, m0, &full[s]);
          #pragma unroll
          for (int j = 0; j < BN / 64; ++j) tma2d(Bs + s * B_ELEMS + j * 64 * BK, &tB, n0 + j * 64, kt * BK, &full[s]);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    int it = 0;
    int w = tid / 32, lane = tid % 32;
    for (int t = blockIdx.x; t < ntiles; t += (PERSIST ? gridDim.x : ntiles)) {
      int grp = t / (G * tiles_n), r = t % (G * tiles_n);
      int m0 = (grp * G + r % G) * BM, n0 = (r / G) * BN;
      float acc[128];
      for (int kt = 0; kt < KT; ++kt, ++it) {
        int s = it % ST;
        mbar_wait(&full[s], (it / ST) & 1);
        tirc_wgmma_fence();
        #pragma unroll
        for (int k1 = 0; k1 < 4; ++k1) {
          ws_wgmma(acc, tirc_wgmma_desc<128>(As + s * A_ELEMS + (wg - 1) * 64 * BK + k1 * 16),
                   tirc_wgmma_desc<128>(Bs + s * B_ELEMS + k1 * 16 * 64, 64 * BK * 2), (kt > 0 || k1 > 0) ? 1 : 0);
        }
        tirc_wgmma_commit();
        tirc_wgmma_wait<1>();
        if (kt > 0 && tid == 0) mbar_arrive(&empty[(it - 1) % ST]);
      }
      tirc_wgmma_wait<0>();
      if (tid == 0) mbar_arrive(&empty[(it - 1) % ST]);
      int row = m0 + (wg - 1) * 64 + w * 16 + lane / 4;
      #pragma unroll
      for (int i = 0; i < BN / 8; ++i) {
        int col = n0 + 8 * i + 2 * (lane % 4);
        *reinterpret_cast<float2*>(C + (size_t)row * N + col) = make_float2(acc[4 * i], acc[4 * i + 1]);
        *reinterpret_cast<float2*>(C + (size_t)(row + 8) * N + col) = make_float2(acc[4 * i + 2], acc[4 * i + 3]);
      }
    }
  }
}

static void ck(cudaError_t e, const char* w) { if (e) { printf("%s: %s\n", w, cudaGetErrorString(e)); exit(1); } }

static CUtensorMap make_map(const half* p, int inner, int outer, int box_inner, int box_outer) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
  cuuint64_t strides[1] = {(cuuint64_t)inner * 2};
  cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer};
  cuuint32_t es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void*)p, dims, strides, box, es,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r) { printf("encode %d\n", r); exit(1); }
  return m;
}

template <class F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f();
  std::vector<float> ts;
  for (int i = 0; i < 20; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float t; cudaEventElapsedTime(&t, a, b); ts.push_back(t); }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

int main(int argc, char** argv) {
  int S = argc > 1 ? atoi(argv[1]) : 4096;
  int M = S, N = S, K = S;
  size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
  std::vector<half> ha(na), hb(nb);
  srand(7);
  for (auto& x : ha) x = __float2half((rand() / (float)RAND_MAX) * 2 - 1);
  for (auto& x : hb) x = __float2half((rand() / (float)RAND_MAX) * 2 - 1);
  half *A, *B; float *C, *R, *T;
  ck(cudaMalloc(&A, na * 2), "A"); ck(cudaMalloc(&B, nb * 2), "B");
  ck(cudaMalloc(&C, nc * 4), "C"); ck(cudaMalloc(&R, nc * 4), "R"); ck(cudaMalloc(&T, nc * 4), "T");
  cudaMemcpy(A, ha.data(), na * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(B, hb.data(), nb * 2, cudaMemcpyHostToDevice);
  cublasHandle_t h; cublasCreate(&h);
  float one = 1, zero = 0;
  auto cub = [&] { cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_16F, N, A, CUDA_R_16F, K, &zero, R, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
  CUtensorMap tA = make_map(A, K, M, BK, BM), tB = make_map(B, N, K, 64, BK);
  ck(cudaFuncSetAttribute(ws_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM), "attr");
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int ntiles = (M / BM) * (N / BN);
  int grid = PERSIST ? std::min(ntiles, sms) : ntiles;
  auto ws = [&] { ws_kernel<<<grid, 384, SMEM>>>(tA, tB, C, M, N, K); };
  ck(cudaFuncSetAttribute(hgemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 196608), "attr2");
  auto tk = [&] { hgemm_kernel<<<ntiles, dim3(32, 8), 196608>>>(A, B, T); };
  cub(); ws(); tk();
  ck(cudaDeviceSynchronize(), "run");
  std::vector<float> hr(nc), hc(nc), ht(nc);
  cudaMemcpy(hr.data(), R, nc * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(hc.data(), C, nc * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(ht.data(), T, nc * 4, cudaMemcpyDeviceToHost);
  double e1 = 0, e2 = 0;
  for (size_t i = 0; i < nc; ++i) { e1 = std::max(e1, (double)fabs(hc[i] - hr[i])); e2 = std::max(e2, (double)fabs(ht[i] - hr[i])); }
  float tc = timeit(cub), tw = timeit(ws), tt = timeit(tk), tc2 = timeit(cub);
  double fl = 2.0 * M * N * K;
  printf("S=%d ST=%d PERSIST=%d  cublas %.4f/%.4f ms (%.0f TF)  ws %.4f ms (%.0f TF, %.3fx, maxdiff %.2e)  tirc %.4f ms (%.3fx, maxdiff %.2e)\n",
         S, ST, PERSIST, tc, tc2, fl / tc / 1e9, tw, fl / tw / 1e9, std::min(tc, tc2) / tw, e1, tt, std::min(tc, tc2) / tt, e2);
  return 0;
}
