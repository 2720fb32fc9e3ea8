"""The Python package on the GPU, against PyTorch: the kernel called on
CUDA tensors through DLPack gives torch.matmul's and torch.softmax's
results; bad tensors are a TypeError or ValueError naming the parameter.
Skipped (and reported as skipped) where there is no torch or no GPU."""

import pathlib

import pytest

import tirc

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not tirc.gpu_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_matmul_on_torch_tensors_matches_torch_matmul():
    m, n, k = 1000, 1100, 999
    kern = tirc.load(ROOT / "ir-examples" / "matmul.tir", defines={"M": m, "N": n, "K": k}).build(
        "step6_async", params={"STAGES": 2}
    )
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda")
    kern(a, b, c)
    torch.cuda.synchronize()
    ref = (a.double() @ b.double()).float()
    assert torch.linalg.norm(c - ref) / torch.linalg.norm(ref) < 1e-5


def test_one_kernel_for_every_batch_of_tokens():
    """`m = T.int32()`: loaded once, launched at each m with its own grid."""
    kern = tirc.load(ROOT / "ir-examples" / "matmul_dynamic.tir").build("step6_async", params={"STAGES": 2})
    b = torch.randn(4096, 4096, device="cuda")
    for m in (1, 17, 1000, 130):
        a = torch.randn(m, 4096, device="cuda")
        c = torch.full((m, 4096), float("nan"), device="cuda")
        kern(a, b, c)
        torch.cuda.synchronize()
        ref = (a.double() @ b.double()).float()
        assert torch.linalg.norm(c - ref) / torch.linalg.norm(ref) < 1e-5, m
    with pytest.raises(ValueError, match="C: expected shape"):
        kern(torch.randn(5, 4096, device="cuda"), b, torch.empty(6, 4096, device="cuda"))


def test_one_kernel_for_every_linear_layer_shape():
    """m, n and k all at run time: one kernel, rows aligned or not."""
    kern = tirc.load(ROOT / "ir-examples" / "linear_dynamic.tir").build("step6_async", params={"STAGES": 2})
    for m, n, k in [(1, 4096, 4096), (130, 1100, 999), (1000, 1001, 1002), (64, 64, 1)]:
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        c = torch.full((m, n), float("nan"), device="cuda")
        kern(a, b, c)
        torch.cuda.synchronize()
        ref = (a.double() @ b.double()).float()
        assert torch.linalg.norm(c - ref) / torch.linalg.norm(ref) < 1e-5, (m, n, k)


def test_softmax_matches_torch_softmax():
    kern = tirc.load(ROOT / "tests" / "data" / "conformance" / "softmax_threads.tir").build()
    shape = kern.arguments[0]["shape"]
    a = torch.randn(*shape, device="cuda")
    b = torch.empty(*shape, device="cuda")
    kern(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(b, torch.softmax(a, dim=-1), rtol=1e-4, atol=1e-6)


def test_bad_tensors_name_the_parameter():
    kern = tirc.load(ROOT / "ir-examples" / "matmul.tir", defines={"M": 64, "N": 64, "K": 64}).build("step4")
    a, b, c = (torch.randn(64, 64, device="cuda") for _ in range(3))
    with pytest.raises(TypeError, match="A: expected float32, got float16"):
        kern(a.half(), b, c)
    with pytest.raises(ValueError, match="B: not contiguous"):
        kern(a, b.t(), c)
    with pytest.raises(ValueError, match=r"C: expected shape \(64, 64\), got \(32, 64\)"):
        kern(a, b, c[:32])
    with pytest.raises(TypeError, match="on a GPU and the others on the host"):
        kern(a, b.cpu(), c)


def test_bench_reports_the_ratio_to_cublas():
    kern = tirc.load(ROOT / "ir-examples" / "matmul.tir", defines={"M": 2048, "N": 2048, "K": 2048}).build(
        "step6_async", params={"STAGES": 2}
    )
    r = kern.bench(compare="cublas", repeat=10, warmup=3)
    assert r["status"] == "ok" and r["ratio_vs_cublas"] > 0.5, r


def test_scalar_parameters_on_torch_tensors():
    """`alpha: T.float32`: one loaded kernel, launched with each call's
    values; a float16 scale arrives rounded to half."""
    m = tirc.load(ROOT / "tests" / "data" / "sizes" / "scalars.tir")
    kern = m.build("two_kernels")
    a, b, c0 = torch.randn(40, 24, device="cuda"), torch.randn(24, 72, device="cuda"), torch.randn(40, 72, device="cuda")
    for alpha, beta in [(0.5, 2.0), (-3.0, 0.25)]:
        c = torch.full((40, 72), float("nan"), device="cuda")
        kern(a, b, c0, c, alpha=alpha, beta=beta)
        torch.cuda.synchronize()
        ref = (alpha * (a.double() @ b.double()) + beta * c0.double()).float()
        torch.testing.assert_close(c, ref, rtol=1e-4, atol=1e-4)
    h = m.build("half_threads")
    x = torch.randn(40, 72, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    h(x, y, s=0.1)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x * torch.tensor(0.1, dtype=torch.float16, device="cuda"), rtol=2e-3, atol=1e-3)
