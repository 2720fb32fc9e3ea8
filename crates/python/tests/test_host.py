"""The Python package on the host: NumPy arrays run on the simulator, bad
arrays are a TypeError or ValueError naming the parameter, a bad file or
schedule a TircError with tirc's diagnostic."""

import json
import os
import pathlib

import numpy as np
import pytest

import tirc

ROOT = pathlib.Path(__file__).resolve().parents[3]
MATMUL = ROOT / "ir-examples" / "matmul.tir"


@pytest.fixture(scope="module")
def matmul():
    return tirc.load(MATMUL, defines={"M": 40, "N": 24, "K": 36})


def rand(shape, dtype="float32", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("schedule", ["step2", "step4", "step6_async"])
def test_schedules_compute_the_product_on_the_simulator(matmul, schedule):
    k = matmul.build(schedule)
    a, b = rand((40, 36), seed=1), rand((36, 24), seed=2)
    c = np.full((40, 24), np.nan, np.float32)
    assert k(a, b, c) is None
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_module_lists_functions_schedules_and_constants(matmul):
    assert matmul.functions == ["matmul"]
    assert "step6_async" in matmul.schedules
    assert matmul.schedules["step2"][0] == "matmul"
    assert matmul.constants["M"] == 40


def test_kernel_exposes_its_source_ir_launch_and_arguments(matmul):
    k = matmul.build("step2", params={"BM": 8, "TM": 2})
    assert "__global__" in k.cuda_source and "matmul_kernel" in k.cuda_source
    assert "T.launch_thread" in k.lowered
    assert "T.block" in k.scheduled
    assert k.launch[0]["name"] == "matmul_kernel"
    assert k.launch[0]["grid"][0] == 5  # 40 rows in blocks of 8
    assert [a["name"] for a in k.arguments] == ["A", "B", "C"]
    assert k.arguments[0]["shape"] == (40, 36) and k.arguments[2]["access"] == "write"
    assert any("split" in step for step in k.trace)
    assert k.replay.startswith("# The schedule `step2` as applied")
    assert 'C = sch.get_block("C")' in k.replay and "def step2_replay(sch):" in k.replay


def test_source_text_and_no_schedule(tmp_path):
    src = MATMUL.read_text()
    m = tirc.load(source=src, defines={"M": 8, "N": 8, "K": 8})
    k = m.build()
    a, b, c = rand((8, 8)), rand((8, 8), seed=3), np.zeros((8, 8), np.float32)
    k(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert k.check(target="sim", seed=4)["status"] == "ok"


def test_non_contiguous_inputs_are_copied_and_outputs_written_in_place(matmul):
    k = matmul.build("step2")
    a = np.asfortranarray(rand((40, 36)))
    b = rand((24, 36), seed=5).T  # a transposed view
    c = np.zeros((40, 48), np.float32)[:, ::2]  # a strided view, written in place
    k(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_check_runs_tirc_run_and_returns_its_json(matmul):
    r = matmul.build("step4").check(target="sim", seed=1)
    assert r["status"] == "ok" and r["target"] == "sim"
    assert r["bytes"] == 4 * (40 * 36 + 36 * 24 + 40 * 24)
    assert r["gflops"] is None  # not timed


def test_bad_arrays_name_the_parameter(matmul):
    k = matmul.build("step2")
    a, b, c = rand((40, 36)), rand((36, 24)), np.zeros((40, 24), np.float32)
    with pytest.raises(TypeError, match=r"A: expected float32, got float64"):
        k(a.astype(np.float64), b, c)
    with pytest.raises(ValueError, match=r"B: expected shape \(36, 24\), got \(24, 36\)"):
        k(a, b.T.copy(), c)
    with pytest.raises(TypeError, match=r"takes 3 arrays \(A, B, C\), 2 given"):
        k(a, b)
    with pytest.raises(TypeError, match=r"C: expected a numpy.ndarray"):
        k(a, b, [[0.0] * 24] * 40)
    ro = np.zeros((40, 24), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"C: the kernel writes it"):
        k(a, b, ro)
    with pytest.raises(TypeError, match="stream= is for arrays on a GPU"):
        k(a, b, c, stream=0)


def test_bad_files_and_schedules_are_tirc_errors_with_the_diagnostic(tmp_path):
    with pytest.raises(tirc.TircError, match="no schedule `stepx`"):
        tirc.load(MATMUL, defines={"M": 8, "N": 8, "K": 8}).build("stepx")
    bad = tmp_path / "bad.tir"
    bad.write_text("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    for i in T.grid(4):\n        A[j] = 1.0\n")
    with pytest.raises(tirc.TircError, match="bad.tir:4"):
        tirc.load(bad).build()
    with pytest.raises(tirc.TircError, match="BM"):
        tirc.load(MATMUL, defines={"M": 8, "N": 8, "K": 8}).build("step2", params={"BM": 3})
    with pytest.raises(TypeError):
        tirc.load()
    with pytest.raises(FileNotFoundError):
        tirc.load(tmp_path / "absent.tir")


def test_build_writes_the_export_files(matmul, tmp_path):
    paths = matmul.build("step2").build(tmp_path / "out")
    names = sorted(os.path.basename(p) for p in paths)
    assert {"kernel.json", "matmul.cu", "matmul.h"} <= set(names)
    meta = json.loads((tmp_path / "out" / "kernel.json").read_text())
    assert meta["launch_function"] == "matmul_launch"
    assert meta["arguments"][1]["shape"] == [36, 24]


def test_tune_on_the_simulator_returns_the_report(tmp_path):
    r = tirc.tune(ROOT / "ir-examples" / "matmul_sweep.tir", "step2", target="sim", budget=2,
                  db=tmp_path / "db.jsonl", seed=1)
    assert r["status"] == "ok", r
    assert r["target"] == "sim"
    assert r["space_size"] >= 2


def test_gpu_arrays_without_a_gpu_are_refused_cleanly(matmul):
    if tirc.gpu_available():
        pytest.skip("a GPU is present: tests/test_gpu.py covers it")

    class FakeCuda:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):
            raise BufferError("no such device memory")

    k = matmul.build("step2")
    with pytest.raises(TypeError, match="on a GPU and the others on the host"):
        k(FakeCuda(), rand((36, 24)), np.zeros((40, 24), np.float32))


def test_one_kernel_runs_at_every_run_time_size():
    """`m = T.int32()`: compiled once, each call takes m from its arrays."""
    mod = tirc.load(ROOT / "ir-examples" / "matmul_dynamic.tir", defines={"N": 24, "K": 20})
    k = mod.build("step2", params={"BM": 16, "BN": 8, "BK": 4, "TM": 4, "TN": 2})
    assert k.sizes == ["m"]
    assert [a["shape"] for a in k.arguments] == [(-1, 20), (20, 24), (-1, 24)]
    source = k.cuda_source
    assert "int m)" in source
    b = rand((20, 24), seed=2)
    for m in (1, 17, 40):
        a = rand((m, 20), seed=m)
        c = np.full((m, 24), np.nan, np.float32)
        k(a, b, c)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert k.cuda_source == source, "one source for every size"
    with pytest.raises(ValueError, match="C: expected shape"):
        k(rand((5, 20)), b, np.zeros((6, 24), np.float32))


def test_every_size_at_run_time_with_a_pipeline_over_k():
    """m, n and k all `T.int32()`: one pipelined kernel, each call takes all
    three from its arrays, k shorter than the pipeline included."""
    k = tirc.load(ROOT / "ir-examples" / "linear_dynamic.tir").build(
        "step6_async", params={"BM": 16, "BN": 16, "BK": 8, "TM": 4, "TN": 4, "STAGES": 3}
    )
    assert k.sizes == ["m", "n", "k"]
    source = k.cuda_source
    for m, n, r in [(5, 7, 1), (17, 16, 9), (20, 33, 40)]:
        a, b = rand((m, r), seed=m), rand((r, n), seed=n)
        c = np.full((m, n), np.nan, np.float32)
        k(a, b, c)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert k.cuda_source == source, "one source for every size"


def test_scalar_parameters_are_given_by_keyword():
    """`alpha: T.float32` parameters: k(A, ..., alpha=.., beta=..) on the
    simulator, one compiled kernel for every value; a missing, unknown or
    non-numeric value is a TypeError naming it."""
    m = tirc.load(ROOT / "tests" / "data" / "sizes" / "scalars.tir")
    k = m.build("fused")
    assert k.scalars == ["alpha", "beta"]
    a, b, c0 = rand((40, 24), seed=1), rand((24, 72), seed=2), rand((40, 72), seed=3)
    for alpha, beta in [(0.5, 2.0), (-1.25, 0.0)]:
        c = np.full((40, 72), np.nan, np.float32)
        k(a, b, c0, c, alpha=alpha, beta=beta)
        want = alpha * (a.astype(np.float64) @ b) + beta * c0
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)
    c = np.zeros((40, 72), np.float32)
    with pytest.raises(TypeError, match="'beta'"):
        k(a, b, c0, c, alpha=1.0)
    with pytest.raises(TypeError, match="'gamma'"):
        k(a, b, c0, c, alpha=1.0, beta=1.0, gamma=2.0)
    with pytest.raises(TypeError, match="alpha: expected a number"):
        k(a, b, c0, c, alpha="x", beta=1.0)
    h = m.build("half_threads")
    x = rand((40, 72), "float16", seed=4)
    y = np.zeros((40, 72), np.float16)
    h(x, y, s=0.1)
    np.testing.assert_allclose(y.astype(np.float64), x.astype(np.float64) * np.float16(0.1), rtol=2e-3, atol=1e-3)
