// Experiment (issue 13, twenty-third stop): can bulk tensor copies read a
// tile of a matrix whose rows are not 16-byte aligned (4097 halves) without
// a padded copy?  A view of the matrix with rows P apart (P * K * 2 bytes is
// a multiple of 16) and one tensor map per row class j (rows j, j+P, ...;
// inner extent j*K + K so that columns past K are zero-filled) gives one box
// per class. Checks (1) that unaligned inner coordinates are taken, (2) the
// zero fill at the edges, (3) where a 128-byte-swizzled box lands when it
// does not start at a multiple of 1024 bytes, and (4) the copies' rate
// against one box per tile from a padded copy, with no compute.
// Build: nvcc -arch=sm_90a -O2 -o tma_rows tma_rows.cu -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
#define CU(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char* s; cuGetErrorString(e, &s); printf("%s:%d %s\n", __FILE__, __LINE__, s); exit(1); } } while (0)

constexpr int P = 8;
struct Maps { CUtensorMap m[P]; };

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(b)), "r"(n) : "memory"); }
__device__ __forceinline__ void mbar_expect(uint64_t* b, unsigned bytes) { asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(b)), "r"(bytes) : "memory"); }
__device__ __forceinline__ void mbar_arrive(uint64_t* b) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(b)) : "memory"); }
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned phase) {
  asm volatile("{\n .reg .pred p;\n W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W%=;\n}" ::"r"(smem(b)), "r"(phase) : "memory");
}
__device__ __forceinline__ void tma2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(smem(dst)), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(smem(bar)) : "memory");
}

__host__ __device__ inline uint16_t val(long r, long k) { return (uint16_t)(((r * 37 + k * 11) % 65000) + 1); }

// One block per case: rows r0 + j + P t (t < h), columns k0 .. k0 + 63, class
// j's box at `extra + j * h * 128` bytes into a 1024-aligned buffer.
__global__ void check(const __grid_constant__ Maps maps, int R, int K, int h, int jmask, const int* cases, int* bad) {
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ uint64_t bar;
  unsigned char* base = (unsigned char*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
  int r0 = cases[3 * blockIdx.x], k0 = cases[3 * blockIdx.x + 1], extra = cases[3 * blockIdx.x + 2];
  for (int i = threadIdx.x; i < 8 * 26 * 128 + 1024; i += blockDim.x) base[i] = 0xab;
  __syncthreads();
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    mbar_expect(&bar, __popc(jmask & 0xff) * h * 128);
    for (int j = 0; j < P; j++) if (jmask >> j & 1) tma2d(base + extra + j * h * 128, &maps.m[j], (jmask & 0x200) ? (j * K + k0) / 8 * 8 : j * K + k0, r0 / P, &bar);
  }
  __syncthreads();
  mbar_wait(&bar, 0);
  int wrongA = 0, wrongB = 0;
  for (int e = threadIdx.x; e < P * h * 64; e += blockDim.x) {
    int j = e / (h * 64), t = (e / 64) % h, c = e % 64;
    if (!(jmask >> j & 1)) continue;
    long r = r0 + j + (long)P * t, k = k0 + c;
    uint16_t want = (r < R && k < K) ? val(r, k) : 0;
    unsigned start = extra + j * h * 128, o = (t * 64 + c) * 2;
    unsigned a = start + o;  // address-based swizzle
    unsigned pa = a ^ (((a >> 7) & 7) << 4);
    unsigned pb = start + (o ^ (((o >> 7) & 7) << 4));  // box-relative
    if (jmask & 0x100) pa = pb = start + o;  // no swizzle
    wrongA += *(uint16_t*)(base + pa) != want;
    wrongB += *(uint16_t*)(base + pb) != want;
  }
  atomicAdd(&bad[2 * blockIdx.x], wrongA);
  atomicAdd(&bad[2 * blockIdx.x + 1], wrongB);
}

// The copies of a (BM x BN) product's k loop, no compute: STAGES tiles in
// flight, one producer thread, one consumer thread releasing each.
template <bool PHASED>
__global__ void stream(const __grid_constant__ Maps ma, const __grid_constant__ Maps mb, int K, int tiles_n, int ksteps, int BM, int BN) {
  constexpr int STAGES = 4;
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ uint64_t full[STAGES], empty[STAGES];
  unsigned char* base = (unsigned char*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
  int stage_bytes = (BM + BN) * 128;
  int tm = blockIdx.x / tiles_n, tn = blockIdx.x % tiles_n;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) { mbar_init(&full[s], 1); mbar_init(&empty[s], 1); }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int k = 0; k < ksteps; k++) {
      int s = k % STAGES;
      if (k >= STAGES) mbar_wait(&empty[s], ((k / STAGES) - 1) & 1);
      unsigned char* a = base + s * stage_bytes;
      unsigned char* b = a + BM * 128;
      mbar_expect(&full[s], stage_bytes);
      if (PHASED) {
        for (int j = 0; j < P; j++) tma2d(a + j * (BM / P) * 128, &ma.m[j], j * K + k * 64, tm * BM / P, &full[s]);
        for (int j = 0; j < P; j++) tma2d(b + j * (BN / P) * 128, &mb.m[j], j * K + k * 64, tn * BN / P, &full[s]);
      } else {
        tma2d(a, &ma.m[0], k * 64, tm * BM, &full[s]);
        tma2d(b, &mb.m[0], k * 64, tn * BN, &full[s]);
      }
    }
  } else if (threadIdx.x == 32) {
    for (int k = 0; k < ksteps; k++) {
      int s = k % STAGES;
      mbar_wait(&full[s], (k / STAGES) & 1);
      mbar_arrive(&empty[s]);
    }
  }
}

static CUtensorMapSwizzle g_swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
static void encode(CUtensorMap* m, void* g, uint64_t inner, uint64_t rows, uint64_t stride_bytes, uint32_t bw, uint32_t bh) {
  uint64_t dims[2] = {inner, rows};
  uint64_t strides[1] = {stride_bytes};
  uint32_t box[2] = {bw, bh};
  uint32_t es[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, g, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            g_swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

// Class j of a R x K matrix (rows P apart): inner extent j*K + K.
static void phased(Maps* out, void* g, long R, long K, int h) {
  for (int j = 0; j < P; j++) encode(&out->m[j], g, (uint64_t)(j * K + K), (uint64_t)((R - j + P - 1) / P), (uint64_t)(P * K * 2), 64, h);
}

int main(int argc, char** argv) {
  long R = 4097, K = 4097;
  // argv: extra bytes, class mask, h (a check alone); none: the whole run.
  int only_extra = argc > 1 ? atoi(argv[1]) : -1, jmask = argc > 2 ? strtol(argv[2], 0, 0) : 0xff, only_h = argc > 3 ? atoi(argv[3]) : 0;
  if (argc > 5) jmask |= 0x200;  // coordinates rounded down to 16 bytes (the map alone on trial)
  if (argc > 4) { g_swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; jmask |= 0x100; }  // the check reads rows unswizzled
  std::vector<uint16_t> host(R * K);
  for (long r = 0; r < R; r++) for (long k = 0; k < K; k++) host[r * K + k] = val(r, k);
  void* dA; CK(cudaMalloc(&dA, R * K * 2));
  CK(cudaMemcpy(dA, host.data(), R * K * 2, cudaMemcpyHostToDevice));
  // (1)-(3): cases (r0, k0, extra bytes)
  std::vector<int> cases;
  for (int r0 : {0, 128, 3968, 4096}) for (int k0 : {0, 64, 4032, 4096}) for (int extra : {0, 128, 256, 896}) if (only_extra < 0 || extra == only_extra) { cases.push_back(r0); cases.push_back(k0); cases.push_back(extra); }
  int n = cases.size() / 3;
  int *dc, *dbad; CK(cudaMalloc(&dc, cases.size() * 4)); CK(cudaMalloc(&dbad, n * 8));
  CK(cudaMemcpy(dc, cases.data(), cases.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(check, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 26 * 128 + 4096));
  for (int h : {16, 26}) if (!only_h || h == only_h) {
    Maps m; phased(&m, dA, R, K, h);
    CK(cudaMemset(dbad, 0, n * 8));
    check<<<n, 256, 8 * 26 * 128 + 4096>>>(m, R, K, h, jmask, dc, dbad);
    CK(cudaDeviceSynchronize());
    std::vector<int> bad(2 * n); CK(cudaMemcpy(bad.data(), dbad, n * 8, cudaMemcpyDeviceToHost));
    int a = 0, b = 0;
    for (int i = 0; i < n; i++) {
      a += bad[2 * i]; b += bad[2 * i + 1];
      if (bad[2 * i]) printf("h=%d r0=%d k0=%d extra=%d: %d wrong (address-based), %d (box-relative)\n", h, cases[3 * i], cases[3 * i + 1], cases[3 * i + 2], bad[2 * i], bad[2 * i + 1]);
    }
    printf("check extra=%d mask=0x%x h=%d: %d cases, wrong elements: address-based swizzle %d, box-relative %d (of %d)\n", only_extra, jmask, h, n, a, b, n * __builtin_popcount(jmask & 0xff) * h * 64);
  }
  if (argc > 1) return 0;
  // (4): the k loop's copies for 4097^3 tiles of 128 x BN.
  long Kp = 4104;
  void *dAp, *dBp, *dB; CK(cudaMalloc(&dAp, R * Kp * 2)); CK(cudaMalloc(&dBp, R * Kp * 2)); CK(cudaMalloc(&dB, R * K * 2));
  CK(cudaMemset(dAp, 0, R * Kp * 2)); CK(cudaMemset(dBp, 0, R * Kp * 2)); CK(cudaMemcpy(dB, dA, R * K * 2, cudaMemcpyDeviceToDevice));
  int BM = 128, ksteps = (K + 63) / 64;
  auto sb = [](int bm, int bn) { return 4 * (bm + bn) * 128 + 1024; };
  CK(cudaFuncSetAttribute(stream<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, sb(128, 256)));
  CK(cudaFuncSetAttribute(stream<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, sb(128, 256)));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int BN : {208, 256}) {
    int tiles_m = (R + BM - 1) / BM, tiles_n = (R + BN - 1) / BN;
    Maps pa, pb, aa, ab;
    phased(&pa, dA, R, K, BM / P); phased(&pb, dB, R, K, BN / P);
    encode(&aa.m[0], dAp, Kp, R, Kp * 2, 64, BM); encode(&ab.m[0], dBp, Kp, R, Kp * 2, 64, BN);
    for (int phasedv = 0; phasedv < 2; phasedv++) {
      std::vector<float> t;
      for (int it = 0; it < 25; it++) {
        cudaEventRecord(e0);
        if (phasedv) stream<true><<<tiles_m * tiles_n, 64, sb(BM, BN)>>>(pa, pb, K, tiles_n, ksteps, BM, BN);
        else stream<false><<<tiles_m * tiles_n, 64, sb(BM, BN)>>>(aa, ab, K, tiles_n, ksteps, BM, BN);
        cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (it >= 5) t.push_back(ms);
      }
      CK(cudaGetLastError());
      std::sort(t.begin(), t.end());
      printf("stream 4097^3 BM=%d BN=%d %s: %.4f ms (median of 20), %d boxes a stage\n", BM, BN, phasedv ? "row classes, no copy" : "padded copy, one box", t[t.size() / 2], phasedv ? 2 * P : 2);
    }
  }
  return 0;
}
