"""Triton's float32 matmul (no TF32) against cuBLAS in one process, for the
table of issue 14 in docs/benchmarks.md.

    python scripts/triton_sgemm.py 1024 2048 4096 8192 4096x11008x4096

Each size: A (M x K) and B (K x N) fresh uniform random float32; cuBLAS is
torch.matmul with TF32 off; Triton is the kernel below, autotuned over a
few tile shapes; both timed with CUDA events (warm-up, then the median of
repeated launches) and checked against a float64 product. Prints one line
per size: milliseconds, TFLOPS and Triton / cuBLAS.
"""
import statistics
import sys

import torch
import triton
import triton.language as tl


def configs():
    out = []
    for bm, bn, bk, warps, stages in [
        (128, 128, 32, 8, 3), (128, 128, 16, 8, 4), (128, 64, 32, 4, 4),
        (64, 128, 32, 4, 4), (128, 256, 16, 8, 3), (64, 64, 32, 4, 5),
    ]:
        out.append(triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_warps=warps, num_stages=stages))
    return out


@triton.autotune(configs=configs(), key=["M", "N", "K"])
@triton.jit
def sgemm(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.cdiv(M, BM)
    cols = tl.cdiv(N, BN)
    # Blocks walk GROUP tile rows of a column before the next column.
    band = pid // (GROUP * cols)
    first = band * GROUP
    height = tl.minimum(rows - first, GROUP)
    pm = first + (pid % (GROUP * cols)) % height
    pn = (pid % (GROUP * cols)) // height
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + ok
        x = tl.load(a + om[:, None] * sam + ka[None, :] * sak, mask=(om[:, None] < M) & (ka[None, :] < K), other=0.0)
        y = tl.load(b + ka[:, None] * sbk + on[None, :] * sbn, mask=(ka[:, None] < K) & (on[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc, input_precision="ieee")
    tl.store(c + om[:, None] * scm + on[None, :] * scn, acc, mask=(om[:, None] < M) & (on[None, :] < N))


def triton_mm(a, b, c):
    M, K = a.shape
    _, N = b.shape
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
    sgemm[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def median_ms(fn, warmup=5, repeat=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(7)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for arg in sys.argv[1:]:
        m, n, k = (int(x) for x in arg.split("x")) if "x" in arg else (int(arg),) * 3
        a = torch.rand(m, k, device="cuda") * 2 - 1
        b = torch.rand(k, n, device="cuda") * 2 - 1
        c_ref = (a.double() @ b.double())
        c_blas = torch.empty(m, n, device="cuda")
        c_tri = torch.empty(m, n, device="cuda")
        blas_ms = median_ms(lambda: torch.matmul(a, b, out=c_blas))
        tri_ms = median_ms(lambda: triton_mm(a, b, c_tri))
        err = lambda c: ((c.double() - c_ref).norm() / c_ref.norm()).item()
        tf = lambda ms: 2 * m * n * k / ms / 1e9
        print(f"{m}x{n}x{k}: cublas {blas_ms:.4f} ms ({tf(blas_ms):.1f} TFLOPS, rel_err {err(c_blas):.1e}) "
              f"triton {tri_ms:.4f} ms ({tf(tri_ms):.1f} TFLOPS, rel_err {err(c_tri):.1e}, {sgemm.best_config}) "
              f"triton/cublas {blas_ms / tri_ms:.3f}")


if __name__ == "__main__":
    main()
