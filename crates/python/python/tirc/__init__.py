"""tirc from Python: load a .tir file, build a schedule, call the kernel.

    import numpy as np, tirc
    mod = tirc.load("ir-examples/matmul.tir", defines={"M": 256, "N": 256, "K": 256})
    k = mod.build("step6_async", params={"STAGES": 2})
    a, b = np.random.rand(256, 256).astype("float32"), np.random.rand(256, 256).astype("float32")
    c = np.empty((256, 256), "float32")
    k(a, b, c)                       # NumPy arrays: on the simulator
    k(ta, tb, tc)                    # torch or CuPy CUDA tensors: on their GPU, on the current stream
    print(k.cuda_source, k.launch)
    print(k.bench(compare="cublas"))  # tirc run --bench's protocol, as a dict

A kernel takes one array per parameter of the function, in order, each of
the parameter's dtype and shape; it writes its outputs in place. NumPy
arrays run on the simulator (slow, exact to the kernel's semantics);
arrays on a CUDA device (anything with ``__dlpack__``: torch, CuPy, JAX)
run on that GPU, asynchronously on the current torch stream (or the
``stream=`` given), and must be C-contiguous.
"""

import ctypes
import json
import os
import tempfile

from . import _tirc
from ._tirc import TircError, __version__

__all__ = ["load", "tune", "Module", "Kernel", "TircError", "gpu_available", "__version__"]

# tirc's dtype names and NumPy's.
_NUMPY = {
    "bool": "bool",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
}

# DLPack's type codes (dlpack.h: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6).
_DLPACK = {
    (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
    (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
    (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
    (4, 16): "bfloat16", (6, 8): "bool",
}
_KDL_CUDA = 2


def gpu_available():
    """Whether tirc can use a GPU here (a CUDA driver and a device)."""
    return _tirc.gpu_available()[0]


def load(path=None, *, source=None, defines=None):
    """Reads a .tir file (or its text, ``source=``); ``defines`` overrides
    module constants and gives size variables their values, as ``-D`` does."""
    if (path is None) == (source is None):
        raise TypeError("tirc.load takes a path or source=, one of the two")
    if path is not None:
        path = os.fspath(path)
        with open(path, encoding="utf-8") as f:
            source = f.read()
    return Module(source, path, defines or {})


class Module:
    """A parsed .tir file: its functions and schedules."""

    def __init__(self, source, path, defines):
        self.source = source
        self.path = path
        self.defines = {str(k): int(v) for k, v in defines.items()}
        funcs, schedules, constants = _tirc.describe(source, self._name(), list(self.defines.items()))
        self.functions = funcs
        #: {schedule name: (function, {parameter: default})}
        self.schedules = {n: (f, dict(ps)) for n, f, ps in schedules}
        #: Module constants after ``defines``.
        self.constants = dict(constants)

    def _name(self):
        return self.path or "<source>"

    def build(self, schedule=None, *, func=None, params=None):
        """Applies a schedule (or none: the function as written, ``func=``
        naming it when the file has several), lowers it and emits CUDA."""
        params = [(str(k), str(v)) for k, v in (params or {}).items()]
        native = _tirc.build_kernel(
            self.source, self._name(), schedule, func, list(self.defines.items()), params
        )
        return Kernel(native, self, schedule, func, params)

    def __repr__(self):
        return f"tirc.Module({self._name()!r}, functions={self.functions}, schedules={list(self.schedules)})"


def _dlpack(x):
    """(data pointer, device type, device id, shape, strides or None, dtype) of an
    array exporting DLPack, read from its capsule without consuming it."""
    capsule = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(capsule, b"dltensor")

    class DLTensor(ctypes.Structure):
        _fields_ = [
            ("data", ctypes.c_void_p),
            ("device_type", ctypes.c_int32),
            ("device_id", ctypes.c_int32),
            ("ndim", ctypes.c_int32),
            ("code", ctypes.c_uint8),
            ("bits", ctypes.c_uint8),
            ("lanes", ctypes.c_uint16),
            ("shape", ctypes.POINTER(ctypes.c_int64)),
            ("strides", ctypes.POINTER(ctypes.c_int64)),
            ("byte_offset", ctypes.c_uint64),
        ]

    t = DLTensor.from_address(ptr)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
    dtype = _DLPACK.get((t.code, t.bits), f"dlpack type code {t.code} of {t.bits} bits")
    if t.lanes != 1:
        dtype = f"{dtype} x{t.lanes}"
    result = ((t.data or 0) + t.byte_offset, t.device_type, t.device_id, shape, strides, dtype)
    del capsule  # its destructor releases the exporter's reference
    return result


def _contiguous(shape, strides):
    if strides is None:
        return True
    want = 1
    for n, s in reversed(list(zip(shape, strides))):
        if n != 1 and s != want:
            return False
        want *= n
    return True


class Kernel:
    """A compiled schedule. Call it on one array per parameter."""

    def __init__(self, native, module, schedule, func, params):
        self._k = native
        self.module = module
        self.schedule = schedule
        self.func = func
        self.params = dict(params)
        #: [{"name", "dtype", "shape", "access"}] per parameter, in order; an
        #: extent of a run-time size (`m = T.int32()`) is -1, taken from the
        #: arrays at each call.
        self.arguments = [
            {"name": n, "dtype": t, "shape": tuple(s), "access": a} for n, t, s, a in native.arguments
        ]

    name = property(lambda self: self._k.name, doc="The function's name.")
    sizes = property(
        lambda self: list(self._k.sizes), doc="The function's run-time sizes (`m = T.int32()`), taken from the arrays."
    )
    cuda_source = property(lambda self: self._k.cuda_source, doc="The CUDA source of every kernel.")
    lowered = property(lambda self: self._k.lowered, doc="The lowered TensorIR.")
    scheduled = property(lambda self: self._k.scheduled, doc="The TensorIR after the schedule.")
    trace = property(lambda self: self._k.trace, doc="The schedule's steps as applied.")
    replay = property(lambda self: self._k.replay, doc="The schedule as applied, as a schedule that replays it.")

    @property
    def launch(self):
        """Each kernel, in launch order: {"name", "grid", "block", "dynamic_shared_bytes"}."""
        return [
            {"name": n, "grid": tuple(g), "block": tuple(b), "dynamic_shared_bytes": s}
            for n, g, b, s in self._k.launch
        ]

    def __repr__(self):
        args = ", ".join(f"{a['name']}: {a['dtype']}{list(a['shape'])}" for a in self.arguments)
        return f"tirc.Kernel({self.name}({args}), schedule={self.schedule!r})"

    scalars = property(
        lambda self: [name for name, _ in self._k.scalars],
        doc="The function's scalar parameters (`alpha: T.float32`), given by keyword at each call.",
    )

    def __call__(self, *arrays, stream=None, **scalars):
        if len(arrays) != len(self.arguments):
            names = ", ".join(a["name"] for a in self.arguments)
            raise TypeError(f"{self.name} takes {len(self.arguments)} arrays ({names}), {len(arrays)} given")
        values = self._scalar_values(scalars)
        on_device = [_is_device_array(x) for x in arrays]
        if all(on_device):
            return self._call_device(arrays, stream, values)
        if any(on_device):
            which = ", ".join(a["name"] for a, d in zip(self.arguments, on_device) if d)
            raise TypeError(f"{self.name}: {which} on a GPU and the others on the host: pass all on one")
        if stream is not None:
            raise TypeError("stream= is for arrays on a GPU")
        return self._call_host(arrays, values)

    def _scalar_values(self, given):
        """The scalar parameters' values, in the kernels' order, from the
        call's keywords: each needed, none unknown, each a number."""
        names = self.scalars
        unknown = [k for k in given if k not in names]
        if unknown:
            known = ", ".join(names) if names else "none"
            raise TypeError(f"{self.name} has no scalar parameter {unknown[0]!r} (its scalar parameters: {known})")
        missing = [n for n in names if n not in given]
        if missing:
            raise TypeError(f"{self.name}: give the scalar parameter {missing[0]!r} by keyword, e.g. {missing[0]}=0.5")
        values = []
        for n in names:
            try:
                values.append(float(given[n]))
            except (TypeError, ValueError):
                raise TypeError(f"{n}: expected a number, got {type(given[n]).__name__}") from None
        return values

    def _shapes(self, shapes):
        """The parameters' shapes for arrays of `shapes`: the declared ones,
        or, for a function of run-time sizes, those the sizes read off the
        arrays make (the kernels are bound to those sizes for the call)."""
        if not self._k.sizes:
            return [a["shape"] for a in self.arguments]
        return [tuple(s) for s in self._k.bind([list(s) for s in shapes])]

    def _call_host(self, arrays, scalars=()):
        import numpy as np

        data = []
        for a, x in zip(self.arguments, arrays):
            if not isinstance(x, np.ndarray):
                raise TypeError(
                    f"{a['name']}: expected a numpy.ndarray or an array on a CUDA device, got {type(x).__name__}"
                )
        wants = self._shapes([x.shape for x in arrays])
        for a, x, shape in zip(self.arguments, arrays, wants):
            if not isinstance(x, np.ndarray):
                raise TypeError(
                    f"{a['name']}: expected a numpy.ndarray or an array on a CUDA device, got {type(x).__name__}"
                )
            want = _NUMPY.get(a["dtype"])
            if want is None:
                raise TypeError(f"{a['name']}: {a['dtype']} has no NumPy type; pass it on the GPU")
            if x.dtype != np.dtype(want):
                raise TypeError(f"{a['name']}: expected {want}, got {x.dtype}")
            if tuple(x.shape) != shape:
                raise ValueError(f"{a['name']}: expected shape {shape}, got {tuple(x.shape)}")
            if a["access"] in ("write", "readwrite") and not x.flags.writeable:
                raise ValueError(f"{a['name']}: the kernel writes it, and the array is read-only")
            data.append(np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<"), copy=False).tobytes())
        out = self._k.run_host(data, list(scalars))
        for a, x, b, shape in zip(self.arguments, arrays, out, wants):
            if a["access"] in ("write", "readwrite"):
                x[...] = np.frombuffer(b, dtype=np.dtype(_NUMPY[a["dtype"]]).newbyteorder("<")).reshape(shape)

    def _call_device(self, arrays, stream, scalars=()):
        ptrs = []
        device = None
        views = [_dlpack(x) for x in arrays]
        wants = self._shapes([v[3] for v in views])
        for a, view, want in zip(self.arguments, views, wants):
            ptr, dev_type, dev_id, shape, strides, dtype = view
            if dev_type != _KDL_CUDA:
                raise ValueError(f"{a['name']}: on DLPack device type {dev_type}, not a CUDA GPU")
            if device is None:
                device = dev_id
            elif dev_id != device:
                raise ValueError(f"{a['name']}: on GPU {dev_id}, the first array on GPU {device}")
            if dtype != a["dtype"]:
                raise TypeError(f"{a['name']}: expected {a['dtype']}, got {dtype}")
            if tuple(shape) != want:
                raise ValueError(f"{a['name']}: expected shape {want}, got {tuple(shape)}")
            if not _contiguous(shape, strides):
                raise ValueError(f"{a['name']}: not contiguous (strides {strides}); pass .contiguous()")
            ptrs.append(ptr)
        if stream is None:
            stream = _current_stream(arrays[0], device)
        self._k.run_device(ptrs, device, int(stream), list(scalars))

    def _argv(self, extra):
        m = self.module
        if m.path is None:
            fd, path = tempfile.mkstemp(suffix=".tir")
            with os.fdopen(fd, "w") as f:
                f.write(m.source)
        else:
            path = m.path
        argv = ["run", path]
        if self.schedule:
            argv += ["-s", self.schedule]
        if self.func:
            argv += ["--func", self.func]
        for k, v in m.defines.items():
            argv += ["-D", f"{k}={v}"]
        for k, v in self.params.items():
            argv += ["-p", f"{k}={v}"]
        return argv + extra

    def check(self, *, target="auto", seed=None, tolerance=None):
        """``tirc run``: fresh random inputs, the kernel against the
        unscheduled function in float64. Returns its JSON object as a dict
        (``status`` is "ok", "mismatch" or "error")."""
        extra = ["--target", target]
        if seed is not None:
            extra += ["--seed", str(seed)]
        if tolerance is not None:
            extra += ["--tolerance", str(tolerance)]
        return self._run(extra)

    def bench(self, *, repeat=50, warmup=10, compare=None, seed=None):
        """``tirc run --bench`` on the GPU: warm-up launches, CUDA events,
        the median of ``repeat``; ``compare="cublas"`` or ``"copy"`` times
        the baseline in the same run. Returns the JSON object as a dict."""
        extra = ["--target", "cuda", "--bench", "--repeat", str(repeat), "--warmup", str(warmup)]
        if compare:
            extra += ["--compare", compare]
        if seed is not None:
            extra += ["--seed", str(seed)]
        return self._run(extra)

    def _run(self, extra):
        code, text = _tirc.run_json(self._argv(extra))
        result = json.loads(text)
        if result.get("status") == "error":
            raise TircError(result.get("error", "tirc run failed"))
        return result

    def build(self, out_dir, *, name=None, arch="sm_90"):
        """``tirc build``: writes the CUDA source with its launch function,
        the C header, PTX, cubin and kernel.json into ``out_dir``; returns
        the paths."""
        return self._k.build(os.fspath(out_dir), name, arch, self.module.path or "<source>")


def _is_device_array(x):
    if not hasattr(x, "__dlpack_device__"):
        return False
    dev_type, _ = x.__dlpack_device__()
    return int(dev_type) != 1  # kDLCPU


def _current_stream(x, device):
    """The current stream of the array's library: torch's or CuPy's."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch

        return torch.cuda.current_stream(device).cuda_stream
    if mod == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0


def tune(path, schedule, *, defines=None, params=None, space=None, target="cuda", budget=None,
         strategy=None, db=None, repeat=None, warmup=None, seed=None, cluster=None, ray_address=None):
    """``tirc tune``: checks (and on the GPU times) every candidate of a
    schedule's space; returns the JSON report as a dict, candidates ranked.

    ``cluster="ray"`` spreads the candidates over a Ray cluster instead
    (``ray_address``, or a local instance): one task per candidate, with one
    GPU each on ``target="cuda"``; their database records are appended to
    ``db``, and the report lists every candidate with the best first."""
    if cluster == "ray":
        return _tune_ray(path, schedule, defines or {}, params or {}, space or {}, target, budget, db,
                         repeat, warmup, seed, ray_address)
    if cluster is not None:
        raise ValueError(f"cluster={cluster!r}: the clusters tirc knows are: 'ray'")
    argv = ["tune", os.fspath(path), "-s", schedule, "--target", target, "--json", "--no-progress"]
    for k, v in (defines or {}).items():
        argv += ["-D", f"{k}={v}"]
    for k, v in (params or {}).items():
        argv += ["-p", f"{k}={v}"]
    for k, vs in (space or {}).items():
        argv += ["--space", f"{k}=" + ",".join(str(v) for v in vs)]
    for flag, v in (("--budget", budget), ("--strategy", strategy), ("--db", db), ("--repeat", repeat),
                    ("--warmup", warmup), ("--seed", seed)):
        if v is not None:
            argv += [flag, str(v)]
    code, out, err = _tirc.tune_cli(argv)
    if code != 0 and not out.strip():
        raise TircError(err.strip() or f"tirc tune exited with {code}")
    return json.loads(out)


def _ray_reachable(address):
    """Raises TircError unless a TCP connection to a Ray address opens
    within five seconds (ray.init itself may wait a minute)."""
    import socket

    host_port = address.split("://", 1)[-1]
    if host_port in ("auto", "local"):
        return
    host, _, port = host_port.rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except (OSError, ValueError) as e:
        raise TircError(f"cannot reach the Ray cluster at {address}: {e}") from None


def _ray_candidate(source, name, schedule, defines, overrides, target, db_text, extra):
    """One Ray task: tunes a space of one candidate in a scratch folder and
    returns its report and the database records it added."""
    import tempfile as _tempfile

    with _tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        db = os.path.join(d, "db.jsonl")
        with open(db, "w", encoding="utf-8") as f:
            f.write(db_text)
        argv = ["tune", path, "-s", schedule, "--target", target, "--json", "--no-progress", "--db", db]
        for k, v in defines.items():
            argv += ["-D", f"{k}={v}"]
        for k, v in overrides:
            argv += ["-p", f"{k}={v}"]
        code, out, err = _tirc.tune_cli(argv + extra)
        with open(db, encoding="utf-8") as f:
            added = f.read()[len(db_text):]
        report = json.loads(out) if out.strip() else {"status": "error", "error": err.strip()}
        return report, added


def _tune_ray(path, schedule, defines, params, space, target, budget, db, repeat, warmup, seed, address):
    try:
        import ray
    except ImportError:
        raise TircError("cluster='ray' needs Ray: pip install ray") from None
    import random

    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    space_args = [f"{k}=" + ",".join(str(v) for v in vs) for k, vs in space.items()]
    cands = _tirc.tune_space(source, path, schedule, [(k, int(v)) for k, v in defines.items()],
                             [(str(k), str(v)) for k, v in params.items()], space_args)
    if budget is not None:
        random.Random(seed or 0).shuffle(cands)
        cands = cands[:budget]
    extra = []
    for flag, v in (("--repeat", repeat), ("--warmup", warmup), ("--seed", seed)):
        if v is not None:
            extra += [flag, str(v)]
    if not ray.is_initialized():
        if address:
            _ray_reachable(address)
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except Exception as e:  # Ray raises many kinds
            raise TircError(f"cannot start or reach Ray ({address or 'a local instance'}): {e}") from None
    db = os.fspath(db) if db is not None else os.path.join(os.getcwd(), "tirc-tune.jsonl")
    db_text = ""
    if os.path.exists(db):
        with open(db, encoding="utf-8") as f:
            db_text = f.read()
    task = ray.remote(num_gpus=1 if target == "cuda" else 0)(_ray_candidate)
    refs = [task.remote(source, os.path.basename(path), schedule, defines, c, target, db_text, extra) for c in cands]
    results = ray.get(refs)
    candidates, errors = [], []
    with open(db, "a", encoding="utf-8") as f:
        for (report, added), c in zip(results, cands):
            f.write(added)
            if report.get("status") == "error" or not report.get("candidates"):
                errors.append({"params": dict(c), "error": report.get("error", "no result")})
                continue
            candidates.extend(report["candidates"])
    timed = [c for c in candidates if c.get("status") == "ok" and c.get("time_ms") is not None]
    timed.sort(key=lambda c: c["time_ms"])
    ok = [c for c in candidates if c.get("status") == "ok"]
    rest = [c for c in candidates if c not in timed]
    return {
        "status": "ok" if ok and not errors else "error",
        "cluster": "ray",
        "file": path,
        "schedule": schedule,
        "target": target,
        "workers": len(ray.nodes()),
        "space_size": len(cands),
        "best": timed[0]["params"] if timed else None,
        "candidates": timed + rest,
        "errors": errors,
        "db": db,
    }
