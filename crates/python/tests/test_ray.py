"""tirc.tune(..., cluster="ray") on a local Ray instance, on the simulator:
one Ray task per candidate, every candidate checked, the report in one
dict; an unreachable cluster is a TircError at once, not a hang. Skipped
(and reported so) where Ray is not installed."""

import pathlib
import time

import pytest

import tirc

ray = pytest.importorskip("ray")

ROOT = pathlib.Path(__file__).resolve().parents[3]
SWEEP = ROOT / "ir-examples" / "matmul_sweep.tir"


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def test_candidates_run_as_ray_tasks_on_the_simulator(local_ray, tmp_path):
    space = {"BM": [32, 64], "TM": [4, 8]}
    r = tirc.tune(SWEEP, "step2", target="sim", space=space, params={"BN": 32, "BK": 16, "TN": 4, "order": "k_innermost"},
                  db=tmp_path / "db.jsonl", cluster="ray")
    assert r["status"] == "ok", r
    assert r["cluster"] == "ray" and r["space_size"] == 4
    seen = sorted((c["params"]["BM"], c["params"]["TM"]) for c in r["candidates"])
    assert seen == [(32, 4), (32, 8), (64, 4), (64, 8)]
    assert all(c["status"] == "ok" for c in r["candidates"]), r["candidates"]
    # The same candidates without Ray come to the same verdicts.
    direct = tirc.tune(SWEEP, "step2", target="sim", space=space, params={"BN": 32, "BK": 16, "TN": 4, "order": "k_innermost"},
                       db=tmp_path / "direct.jsonl")
    assert sorted(c["status"] for c in direct["candidates"]) == sorted(c["status"] for c in r["candidates"])


def test_an_unreachable_cluster_is_an_error_at_once():
    if ray.is_initialized():
        ray.shutdown()
    t0 = time.time()
    with pytest.raises(tirc.TircError, match="cannot reach the Ray cluster at 127.0.0.1:9"):
        tirc.tune(SWEEP, "step2", target="sim", budget=1, cluster="ray", ray_address="127.0.0.1:9")
    assert time.time() - t0 < 30


def test_an_unknown_cluster_is_refused():
    with pytest.raises(ValueError, match="'ray'"):
        tirc.tune(SWEEP, "step2", target="sim", cluster="slurm")
