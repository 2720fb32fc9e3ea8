extern "C" __global__ void __launch_bounds__(256) hgemm_kernel(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C) {
  extern __shared__ __align__(1024) unsigned char tirc_dyn_smem[];
  half* A_shared = reinterpret_cast<half*>(tirc_dyn_smem + 0);
  half* B_shared = reinterpret_cast<half*>(tirc_dyn_smem + 65536);
  float C_warp[128];
  #pragma unroll
  for (int j_1_init_0 = 0; j_1_init_0 < 16; ++j_1_init_0) {
    tirc_wgmma_commit();
    tirc_wgmma_wait<0>();
    tirc_mma_fill(C_warp + j_1_init_0 * 8, 0.0f);
    tirc_wgmma_fence();
  }
  tirc_wgmma_commit();
  tirc_wgmma_wait<0>();
  tirc_fence_proxy_async();
  __syncthreads();
  tirc_wgmma_fence();
  #pragma unroll
  for (int ax0_1_ax1_1_fused_0 = 0; ax0_1_ax1_1_fused_0 < 4; ++ax0_1_ax1_1_fused_0) {
    tirc_cp_async<16>(A_shared + tirc_swizzle<128, 2>(ax0_1_ax1_1_fused_0 * 2048 + ((int)(threadIdx.y)) * 256 + ((int)(threadIdx.x)) * 8), A + ((int)(blockIdx.x)) / 128 * 4194304 + ((int)(blockIdx.x)) % 8 * 524288 + ax0_1_ax1_1_fused_0 * 131072 + ((int)(threadIdx.y)) * 16384 + ((int)(threadIdx.x)) / 8 * 4096 + ((int)(threadIdx.x)) % 8 * 8);
  }
  #pragma unroll
  for (int ax0_1_ax1_1_fused_0_1 = 0; ax0_1_ax1_1_fused_0_1 < 8; ++ax0_1_ax1_1_fused_0_1) {
    tirc_cp_async<16>(B_shared + tirc_swizzle<128, 2>(((int)(threadIdx.x)) / 8 * 4096 + ax0_1_ax1_1_fused_0_1 * 512 + ((int)(threadIdx.y)) * 64 + ((int)(threadIdx.x)) % 8 * 8), B + ax0_1_ax1_1_fused_0_1 * 32768 + ((int)(threadIdx.y)) * 4096 + ((int)(blockIdx.x)) / 8 % 16 * 256 + ((int)(threadIdx.x)) * 8);
  }
  tirc_cp_async_commit();
  #pragma unroll
  for (int ax0_1_ax1_1_fused_0_2 = 0; ax0_1_ax1_1_fused_0_2 < 4; ++ax0_1_ax1_1_fused_0_2) {
    tirc_cp_async<16>(A_shared + tirc_swizzle<128, 2>(ax0_1_ax1_1_fused_0_2 * 2048 + ((int)(threadIdx.y)) * 256 + ((int)(threadIdx.x)) * 8 + 8192), A + ((int)(blockIdx.x)) / 128 * 4194304 + ((int)(blockIdx.x)) % 8 * 524288 + ax0_1_ax1_1_fused_0_2 * 131072 + ((int)(threadIdx.y)) * 16384 + ((int)(threadIdx.x)) / 8 * 4096 + ((int)(threadIdx.x)) % 8 * 8 + 64);
  }
  #pragma unroll
  for (int ax0_1_ax1_1_fused_0_1_1 = 0; ax0_1_ax1_1_fused_0_1_1 < 8; ++ax0_1_ax1_1_fused_0_1_1) {
    tirc_cp_async<16>(B_shared + tirc_swizzle<128, 2>(((int)(threadIdx.x)) / 8 * 4096 + ax0_1_ax1_1_fused_0_1_1 * 512 + ((int)(threadIdx.y)) * 64 + ((int)(threadIdx.x)) % 8 * 8 + 16384), B + ax0_1_ax1_1_fused_0_1_1 * 32768 + ((int)(threadIdx.y)) * 4096 + ((int)(blockIdx.x)) / 8 % 16 * 256 + ((int)(threadIdx.x)) * 8 + 262144);
  }
  tirc_cp_async_commit();
  for (int k_0 = 2; k_0 < 64; ++k_0) {
    tirc_cp_async_wait<1>();
    tirc_wgmma_commit();
    tirc_wgmma_wait<1>();
    tirc_fence_proxy_async();
    __syncthreads();
    tirc_wgmma_fence();
    #pragma unroll
    for (int k_1 = 0; k_1 < 4; ++k_1) {
      tirc_wgmma_m64n256k16_f16_mn(C_warp + 0, tirc_wgmma_desc<128>(A_shared + (k_0 + 2) % 4 * 8192 + ((int)(threadIdx.y)) * 1024 + k_1 * 16 - tirc_warp_in_group() * 1024), tirc_wgmma_desc<128>(B_shared + (k_0 + 2) % 4 * 16384 + k_1 * 1024, 8192));
    }
    #pragma unroll
    for (int ax0_1_ax1_1_fused_0_3 = 0; ax0_1_ax1_1_fused_0_3 < 4; ++ax0_1_ax1_1_fused_0_3) {
      tirc_cp_async<16>(A_shared + tirc_swizzle<128, 2>(k_0 % 4 * 8192 + ax0_1_ax1_1_fused_0_3 * 2048 + ((int)(threadIdx.y)) * 256 + ((int)(threadIdx.x)) * 8), A + ((int)(blockIdx.x)) / 128 * 4194304 + ((int)(blockIdx.x)) % 8 * 524288 + ax0_1_ax1_1_fused_0_3 * 131072 + ((int)(threadIdx.y)) * 16384 + ((int)(threadIdx.x)) / 8 * 4096 + k_0 * 64 + ((int)(threadIdx.x)) % 8 * 8);
    }
    #pragma unroll
    for (int ax0_1_ax1_1_fused_0_1_2 = 0; ax0_1_ax1_1_fused_0_1_2 < 8; ++ax0_1_ax1_1_fused_0_1_2) {
      tirc_cp_async<16>(B_shared + tirc_swizzle<128, 2>(k_0 % 4 * 16384 + ((int)(threadIdx.x)) / 8 * 4096 + ax0_1_ax1_1_fused_0_1_2 * 512 + ((int)(threadIdx.y)) * 64 + ((int)(threadIdx.x)) % 8 * 8), B + k_0 * 262144 + ax0_1_ax1_1_fused_0_1_2 * 32768 + ((int)(threadIdx.y)) * 4096 + ((int)(blockIdx.x)) / 8 % 16 * 256 + ((int)(threadIdx.x)) * 8);
    }
    tirc_cp_async_commit();
  }
  tirc_cp_async_wait<1>();
  tirc_wgmma_commit();
  tirc_wgmma_wait<1>();
  tirc_fence_proxy_async();
  __syncthreads();
  tirc_wgmma_fence();
  #pragma unroll
  for (int k_1_1 = 0; k_1_1 < 4; ++k_1_1) {
    tirc_wgmma_m64n256k16_f16_mn(C_warp + 0, tirc_wgmma_desc<128>(A_shared + ((int)(threadIdx.y)) * 1024 + k_1_1 * 16 + 16384 - tirc_warp_in_group() * 1024), tirc_wgmma_desc<128>(B_shared + k_1_1 * 1024 + 32768, 8192));
  }
  tirc_cp_async_commit();
  tirc_cp_async_wait<1>();
  tirc_wgmma_commit();
  tirc_wgmma_wait<1>();
  tirc_fence_proxy_async();
  __syncthreads();
  tirc_wgmma_fence();
  #pragma unroll
  for (int k_1_2 = 0; k_1_2 < 4; ++k_1_2) {
    tirc_wgmma_m64n256k16_f16_mn(C_warp + 0, tirc_wgmma_desc<128>(A_shared + ((int)(threadIdx.y)) * 1024 + k_1_2 * 16 + 24576 - tirc_warp_in_group() * 1024), tirc_wgmma_desc<128>(B_shared + k_1_2 * 1024 + 49152, 8192));
  }
  tirc_cp_async_commit();
  tirc_cp_async_wait<0>();
  #pragma unroll
  for (int ax1_0 = 0; ax1_0 < 16; ++ax1_0) {
    tirc_wgmma_commit();
    tirc_wgmma_wait<0>();
    tirc_mma_store(C + ((int)(blockIdx.x)) / 128 * 4194304 + ((int)(blockIdx.x)) % 8 * 524288 + ((int)(threadIdx.y)) * 65536 + ((int)(blockIdx.x)) / 8 % 16 * 256 + ax1_0 * 16, C_warp + ax1_0 * 8, 4096);
    tirc_wgmma_fence();
  }
}
