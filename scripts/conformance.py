#!/usr/bin/env python3
"""Conformance run of tirc over a corpus folder of `.tir` files.

Usage:
    scripts/conformance.py [options] CORPUS

    CORPUS            a folder of .tir files (searched recursively). When it
                      holds a manifest.json with an "items" list whose entries
                      name a "file" and its "funcs", the function names are
                      taken from it; otherwise they are read from the file
                      (`def NAME(` under `@T.prim_func`).

Options:
    --tirc PATH       the tirc binary (default: target/release/tirc of the
                      repository this script lives in)
    --jobs N          files processed in parallel (default 2)
    --timeout S       wall-clock limit of every tirc invocation, seconds
                      (default 20)
    --mem-limit MB    address-space limit of every tirc invocation (default
                      8192; 0 for none)
    --seed N          the --seed passed to `tirc run` (default 1)
    --limit N         only the first N files (sorted by name)
    --match TEXT      only files whose name contains TEXT
    --top N           refusal groups to print (default 25)
    --json OUT        write the per-file results, and the summary, to OUT
    --no-run / --no-fmt   skip a stage
    --keep-fmt DIR    keep out1/out2 of every fmt non-fixed-point in DIR
    -q                no per-file progress on stderr

For every file, three stages:

  1. check   `tirc check FILE`
             accepted (exit 0) | refused (exit 1, a diagnostic) |
             usage (exit 2) | panic (exit 101 or "panicked" on stderr) |
             oom ("memory allocation of N bytes failed" under --mem-limit) |
             crash (killed by a signal: abort, stack overflow) | timeout
  2. run     for accepted files, `tirc run FILE --target sim --json --seed N`
             (`--target cuda`: on the GPU),
             once per prim_func (`--func NAME` when the file has several):
             ok | mismatch (status "mismatch", with rel_err) |
             refused (a compile diagnostic, no JSON) |
             error (status "error": the simulator or the reference failed) |
             usage | panic | oom | crash | timeout
             For mismatches the text form is run once more to get the count
             of NaN/inf output elements (unwritten or wrong), which --json
             does not report.
  3. fmt     `tirc fmt --canonical FILE` -> out1, the same of out1 -> out2 (the printer's round trip):
             fixed (out1 == out2) | not-fixed (with the first differing
             line) | fmt-refused (the first fmt exits non-zero) |
             fmt2-refused (fmt of out1 fails) | panic | oom | crash | timeout;
             and `tirc check out1` (out1_check), to catch fmt output that
             no longer checks although the input did ("fmt-breaks-check").

Refusals (check, run and fmt) are grouped by diagnostic: the first line of
the first error message (a miette report's "× ..." line with its wrapped
continuation lines, or an "error: ..." line), with file names, line/column
numbers, anything in backticks or quotes, and bare numbers replaced by
placeholders, so that similar messages group together. Each group shows an
example file, its most common exact messages, and the source lines the
diagnostic points at. `run` stages count per prim_func; the rest per file.

Output: a report on stdout (progress per file on stderr unless -q) and,
with --json, {"meta", "summary", "results": [per-file records]}.

Example:
    scripts/conformance.py /work/shared/tvm-corpus --jobs 2 --timeout 20 \
        --json /tmp/conformance.json

The exit status is 0 when the run finished (whatever it found), 2 on a
usage error.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHECK_OUTCOMES = ["accepted", "refused", "usage", "panic", "crash", "oom", "timeout"]
RUN_OUTCOMES = ["ok", "mismatch", "refused", "error", "usage", "panic", "crash", "oom", "timeout"]
FMT_OUTCOMES = ["fixed", "not-fixed", "fmt-refused", "fmt2-refused", "usage", "panic", "crash", "oom", "timeout"]


# --------------------------------------------------------------------------
# Running tirc


class Result:
    """One tirc invocation."""

    def __init__(self, rc, stdout, stderr, seconds, timed_out):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.timed_out = timed_out


def set_mem_limit(mem_mb):
    """Limits the address space of this process, and so of every tirc it
    starts (set once, before any thread: preexec_fn is unsafe with threads)."""
    if mem_mb:
        b = mem_mb * 1024 * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            b = min(b, hard)
        resource.setrlimit(resource.RLIMIT_AS, (b, hard))


def invoke(args, cfg) -> Result:
    env = dict(os.environ, NO_COLOR="1", RUST_BACKTRACE="0", COLUMNS="100")
    t0 = time.monotonic()
    p = subprocess.Popen(
        [cfg.tirc, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=cfg.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        timed_out = True
    dt = time.monotonic() - t0
    return Result(
        p.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        round(dt, 3),
        timed_out,
    )


def failure_kind(r: Result):
    """timeout / oom / panic / crash / usage, or None for an ordinary exit 0 or 1."""
    if r.timed_out:
        return "timeout"
    if "memory allocation of" in r.stderr and "failed" in r.stderr:
        return "oom"
    if r.rc == 101 or "panicked" in r.stderr:
        return "panic"
    if r.rc < 0:
        return "crash"
    if r.rc == 2:
        return "usage"
    return None


# --------------------------------------------------------------------------
# Diagnostics

_ERR_START = re.compile(r"^\s*×\s?(.*)$")
_CONT = re.compile(r"^\s*│\s?(.*)$")
_SRC_BOX = re.compile(r"^\s*[╭├]─")


def first_error(stderr: str) -> str:
    """The first error message of a tirc stderr, on one line."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        m = _ERR_START.match(line)
        if m:
            parts = [m.group(1).strip()]
            for nxt in lines[i + 1 :]:
                if _SRC_BOX.match(nxt):
                    break
                c = _CONT.match(nxt)
                if not c:
                    break
                parts.append(c.group(1).strip())
            return " ".join(p for p in parts if p)
        s = line.strip()
        if s.startswith("error:") or s.startswith("Error:"):
            return s.split(":", 1)[1].strip()
    for line in lines:  # anything else: the first line that is not a warning
        s = line.strip()
        if s and not s.startswith("⚠") and not s.startswith("│"):
            return s
    return ""


_CODE = re.compile(r"^\s*\d+\s│\s?(?:[╭│╰]─?▶?\s?)?(.*)$")


def first_snippet(stderr: str) -> str:
    """The source line the first error points at (the line above the first
    `·` underline of its miette box, or the first line of a multi-line span)."""
    lines = stderr.splitlines()
    start = next((i for i, l in enumerate(lines) if _ERR_START.match(l)), None)
    if start is None:
        return ""
    prev = None
    for line in lines[start + 1 :]:
        if _ERR_START.match(line) or line.strip().startswith("╰"):
            break
        if re.match(r"^\s*·", line):
            return prev or ""
        if "─▶" in line:
            m = _CODE.match(line)
            if m:
                return re.sub(r"\s+", " ", m.group(1)).strip()[:120]
        m = _CODE.match(line)
        if m:
            prev = re.sub(r"\s+", " ", m.group(1)).strip()[:120]
    return ""


def panic_message(stderr: str) -> str:
    """`thread 'main' panicked at FILE:L:C:` + its message, on one line."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if "panicked" in line:
            msg = line.strip()
            rest = []
            for nxt in lines[i + 1 :]:
                if nxt.startswith("note:") or nxt.startswith("stack backtrace"):
                    break
                rest.append(nxt.strip())
            return (msg + " " + " ".join(rest)).strip()
    for line in lines:
        if "overflowed its stack" in line or "memory allocation" in line:
            return line.strip()
    return lines[-1].strip() if lines else ""


def normalize(msg: str) -> str:
    """A grouping key: the message with names and numbers replaced."""
    s = msg
    s = re.sub(r"[\w./+-]+\.tir(:\d+)*(:)?", "FILE", s)
    s = re.sub(r"`[^`]*`", "`_`", s)
    s = re.sub(r'"[^"]*"', '"_"', s)
    s = re.sub(r"(?<![\w])'[^']*'", "'_'", s)
    s = re.sub(r"\bline \d+\b", "line N", s)
    s = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?(?![\w])", "N", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s[:200]


# --------------------------------------------------------------------------
# The corpus


def discover(corpus: Path):
    files = sorted(p for p in corpus.rglob("*.tir") if p.is_file())
    funcs = {}
    man = corpus / "manifest.json"
    if man.is_file():
        try:
            data = json.loads(man.read_text())
            for it in data.get("items", []):
                if "file" in it and it.get("funcs"):
                    funcs[str((corpus / it["file"]).resolve())] = list(it["funcs"])
        except (ValueError, OSError) as e:
            print(f"warning: cannot read {man}: {e}", file=sys.stderr)
    return files, funcs


_DEF = re.compile(r"@T\.prim_func[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)\s*\(")


def funcs_of(path: Path, manifest_funcs) -> list:
    key = str(path.resolve())
    if key in manifest_funcs:
        return manifest_funcs[key]
    try:
        return _DEF.findall(path.read_text(errors="replace"))
    except OSError:
        return []


# --------------------------------------------------------------------------
# The stages


SIZE_VARIABLE = re.compile(r"`(\w+)` is a size known only at run time")


def size_defines(sizes):
    return [a for n, v in sorted(sizes.items()) for a in ("-D", f"{n}={v}")]


def stage_check(path: Path, cfg):
    # A function with size variables (`n: T.int32`, `m = T.int32()`) is
    # compiled for given sizes: the sizes tirc asks for get --size-value.
    sizes = {}
    r = invoke(["check", str(path)], cfg)
    while r.rc == 1 and cfg.size_value:
        missing = [n for n in SIZE_VARIABLE.findall(r.stderr) if n not in sizes]
        if not missing:
            break
        sizes.update({n: cfg.size_value for n in missing})
        r = invoke(["check", str(path), *size_defines(sizes)], cfg)
    rec = {"rc": r.rc, "seconds": r.seconds}
    if sizes:
        rec["sizes"] = sizes
    kind = failure_kind(r)
    if kind is None:
        rec["outcome"] = "accepted" if r.rc == 0 else "refused"
    else:
        rec["outcome"] = kind
    if rec["outcome"] == "refused" or rec["outcome"] == "usage":
        rec["message"] = first_error(r.stderr)
        rec["snippet"] = first_snippet(r.stderr)
    elif rec["outcome"] in ("panic", "crash", "oom"):
        rec["message"] = panic_message(r.stderr) or f"exit {r.rc}"
    return rec


def stage_run(path: Path, func, cfg, sizes=None):
    # Size variables are known only at run time: `tirc check` compiles the
    # function without their values, `tirc run` asks for each one it needs.
    sizes = dict(sizes or {})
    while True:
        args = ["run", str(path), "--target", cfg.target, "--json", "--seed", str(cfg.seed), *size_defines(sizes)]
        if func is not None:
            args += ["--func", func]
        r = invoke(args, cfg)
        missing = [n for n in SIZE_VARIABLE.findall(r.stderr) if n not in sizes] if r.rc == 1 and cfg.size_value else []
        if not missing:
            break
        sizes.update({n: cfg.size_value for n in missing})
    rec = {"func": func, "rc": r.rc, "seconds": r.seconds}
    kind = failure_kind(r)
    j = None
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                j = json.loads(line)
            except ValueError:
                pass
    if kind is not None:
        rec["outcome"] = kind
        if kind in ("panic", "crash", "oom"):
            rec["message"] = panic_message(r.stderr) or f"exit {r.rc}"
        elif kind == "usage":
            rec["message"] = first_error(r.stderr)
    elif j is None:
        rec["outcome"] = "ok" if r.rc == 0 else "refused"
        if r.rc != 0:
            rec["message"] = first_error(r.stderr)
            rec["snippet"] = first_snippet(r.stderr)
    else:
        st = j.get("status")
        if st == "ok" and r.rc == 0:
            rec["outcome"] = "ok"
        elif st == "mismatch":
            rec["outcome"] = "mismatch"
        elif st == "error":
            rec["outcome"] = "error"
            rec["message"] = j.get("error", "")
        else:
            rec["outcome"] = "mismatch" if r.rc != 0 else "ok"
        for k in ("rel_err", "max_abs_err", "kernel", "grid", "block"):
            if k in j:
                rec[k] = j[k]
        if rec["outcome"] == "mismatch":
            # --json leaves out how many output elements are NaN/inf (unwritten
            # or wrong); the text output says it.
            t = invoke([a for a in args if a != "--json"], cfg)
            m = re.search(r"(\d+) elements are NaN or infinite", t.stdout)
            rec["non_finite"] = int(m.group(1)) if m else 0
    return rec


def _first_diff(a: str, b: str):
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return i + 1, x, y
    n = min(len(al), len(bl))
    return n + 1, (al[n] if n < len(al) else "<eof>"), (bl[n] if n < len(bl) else "<eof>")


def stage_fmt(path: Path, cfg, tmp: Path):
    rec = {}
    r1 = invoke(["fmt", "--canonical", str(path)], cfg)
    rec["seconds"] = r1.seconds
    kind = failure_kind(r1)
    if kind is not None:
        rec["outcome"] = kind
        rec["message"] = panic_message(r1.stderr) if kind in ("panic", "crash", "oom") else first_error(r1.stderr)
        return rec
    if r1.rc != 0:
        rec["outcome"] = "fmt-refused"
        rec["message"] = first_error(r1.stderr)
        rec["snippet"] = first_snippet(r1.stderr)
        return rec
    d = Path(tempfile.mkdtemp(dir=tmp))
    out1 = d / path.name
    out1.write_text(r1.stdout)
    r2 = invoke(["fmt", "--canonical", str(out1)], cfg)
    kind = failure_kind(r2)
    if kind is not None:
        rec["outcome"] = kind
        rec["message"] = "fmt of out1: " + (
            panic_message(r2.stderr) if kind in ("panic", "crash", "oom") else first_error(r2.stderr)
        )
    elif r2.rc != 0:
        rec["outcome"] = "fmt2-refused"
        rec["message"] = first_error(r2.stderr)
    elif r2.stdout == r1.stdout:
        rec["outcome"] = "fixed"
    else:
        rec["outcome"] = "not-fixed"
        line, x, y = _first_diff(r1.stdout, r2.stdout)
        rec["diff"] = {"line": line, "out1": x, "out2": y}
        if cfg.keep_fmt:
            keep = Path(cfg.keep_fmt)
            keep.mkdir(parents=True, exist_ok=True)
            (keep / (path.stem + ".out1.tir")).write_text(r1.stdout)
            (keep / (path.stem + ".out2.tir")).write_text(r2.stdout)
    c = stage_check(out1, cfg)
    rec["out1_check"] = c["outcome"]
    if "message" in c:
        rec["out1_check_message"] = c["message"]
    shutil.rmtree(d, ignore_errors=True)
    return rec


def process(path: Path, funcs, cfg, tmp: Path):
    rec = {"file": path.name, "path": str(path), "funcs": funcs}
    rec["check"] = stage_check(path, cfg)
    if cfg.run and rec["check"]["outcome"] == "accepted":
        targets = funcs if len(funcs) > 1 else [None]
        sizes = rec["check"].get("sizes")
        rec["run"] = [stage_run(path, f, cfg, sizes) for f in targets]
    if cfg.fmt:
        rec["fmt"] = stage_fmt(path, cfg, tmp)
        if rec["check"]["outcome"] == "accepted" and rec["fmt"].get("out1_check") not in (None, "accepted"):
            rec["fmt"]["fmt_breaks_check"] = True
    return rec


# --------------------------------------------------------------------------
# The report


def summarize(results, top):
    s = {"files": len(results)}
    s["check"] = dict(collections.Counter(r["check"]["outcome"] for r in results))
    s["accepted_with_sizes"] = sum(1 for r in results if r["check"]["outcome"] == "accepted" and r["check"].get("sizes"))
    runs = [(r, x) for r in results for x in r.get("run", [])]
    s["run"] = dict(collections.Counter(x["outcome"] for _, x in runs))
    fmts = [r for r in results if "fmt" in r]
    s["fmt"] = dict(collections.Counter(r["fmt"]["outcome"] for r in fmts))
    s["fmt_out1_check"] = dict(collections.Counter(r["fmt"].get("out1_check", "-") for r in fmts))
    s["fmt_breaks_check"] = [r["file"] for r in fmts if r["fmt"].get("fmt_breaks_check")]

    def label(r, x=None):
        return r["file"] + (f" [{x['func']}]" if x is not None and x.get("func") else "")

    s["panics"] = []
    for r in results:
        if r["check"]["outcome"] in ("panic", "crash", "oom"):
            s["panics"].append({"file": r["file"], "stage": "check", "kind": r["check"]["outcome"], "message": r["check"].get("message", "")})
    for r, x in runs:
        if x["outcome"] in ("panic", "crash", "oom"):
            s["panics"].append({"file": label(r, x), "stage": "run", "kind": x["outcome"], "message": x.get("message", "")})
    for r in fmts:
        if r["fmt"]["outcome"] in ("panic", "crash", "oom"):
            s["panics"].append({"file": r["file"], "stage": "fmt", "kind": r["fmt"]["outcome"], "message": r["fmt"].get("message", "")})
    s["mismatches"] = [
        {"file": label(r, x), "rel_err": x.get("rel_err"), "max_abs_err": x.get("max_abs_err"), "non_finite": x.get("non_finite")}
        for r, x in runs
        if x["outcome"] == "mismatch"
    ]
    s["run_errors"] = [{"file": label(r, x), "message": x.get("message", "")} for r, x in runs if x["outcome"] == "error"]
    s["timeouts"] = (
        [{"file": r["file"], "stage": "check"} for r in results if r["check"]["outcome"] == "timeout"]
        + [{"file": label(r, x), "stage": "run"} for r, x in runs if x["outcome"] == "timeout"]
        + [{"file": r["file"], "stage": "fmt"} for r in fmts if r["fmt"]["outcome"] == "timeout"]
    )
    s["fmt_not_fixed"] = [{"file": r["file"], **r["fmt"]["diff"]} for r in fmts if r["fmt"]["outcome"] == "not-fixed"]
    s["fmt2_refused"] = [{"file": r["file"], "message": r["fmt"].get("message", "")} for r in fmts if r["fmt"]["outcome"] == "fmt2-refused"]

    def groups(items):
        g = collections.OrderedDict()
        for f, msg, snip in items:
            k = normalize(msg)
            if k not in g:
                g[k] = {
                    "group": k,
                    "count": 0,
                    "example": f,
                    "message": msg,
                    "variants": collections.Counter(),
                    "snippets": collections.Counter(),
                }
            g[k]["count"] += 1
            g[k]["variants"][msg[:160]] += 1
            if snip:
                g[k]["snippets"][snip] += 1
        out = sorted(g.values(), key=lambda e: -e["count"])
        for e in out:
            e["variants"] = [{"message": m, "count": c} for m, c in e["variants"].most_common(4)]
            e["snippets"] = [{"source": m, "count": c} for m, c in e["snippets"].most_common(3)]
        return out

    check_groups = groups(
        (r["file"], r["check"].get("message", ""), r["check"].get("snippet", ""))
        for r in results
        if r["check"]["outcome"] == "refused"
    )
    s["check_refusal_groups_total"] = len(check_groups)
    s["check_refusal_groups"] = check_groups[:top] if top else check_groups
    s["run_refusal_groups"] = groups(
        (label(r, x), x.get("message", ""), x.get("snippet", "")) for r, x in runs if x["outcome"] in ("refused", "error")
    )[:top]
    s["fmt_refusal_groups"] = groups(
        (r["file"], r["fmt"].get("message", ""), r["fmt"].get("snippet", ""))
        for r in fmts
        if r["fmt"]["outcome"] == "fmt-refused"
    )[:top]
    return s


def counts_line(order, c):
    return ", ".join(f"{k} {c[k]}" for k in order if c.get(k)) + f"  (total {sum(c.values())})"


def print_report(s, top):
    p = print
    p(f"\n== tirc conformance: {s['files']} files ==")
    p(f"check : {counts_line(CHECK_OUTCOMES, s['check'])}")
    p(f"        of the accepted, {s['accepted_with_sizes']} with -D for their size variables")
    p(f"run   : {counts_line(RUN_OUTCOMES, s['run'])}  [per prim_func, sim]")
    p(f"fmt   : {counts_line(FMT_OUTCOMES, s['fmt'])}")
    p(f"fmt out1 check: {dict(s['fmt_out1_check'])}")

    def section(title, rows):
        p(f"\n-- {title}: {len(rows)}")
        for row in rows:
            p("  " + row)

    section("panics / crashes / out of memory", [f"{x['file']} ({x['stage']}, {x['kind']}): {x['message']}" for x in s["panics"]])
    section(
        "sim mismatches",
        [
            f"{x['file']}: rel_err {x['rel_err']}, max_abs_err {x['max_abs_err']}, non-finite elements {x['non_finite']}"
            for x in s["mismatches"]
        ],
    )
    section("run errors (status \"error\")", [f"{x['file']}: {x['message']}" for x in s["run_errors"]])
    section("timeouts", [f"{x['file']} ({x['stage']})" for x in s["timeouts"]])
    section(
        "fmt not a fixed point",
        [f"{x['file']}: line {x['line']}: out1 {x['out1'].strip()!r} / out2 {x['out2'].strip()!r}" for x in s["fmt_not_fixed"]],
    )
    section("fmt of out1 refused", [f"{x['file']}: {x['message']}" for x in s["fmt2_refused"]])
    section("fmt output refused by check (input accepted)", s["fmt_breaks_check"])

    def grp(title, gs, total=None):
        extra = f" of {total} groups" if total is not None else ""
        p(f"\n-- {title} (top {len(gs)}{extra})")
        for g in gs:
            p(f"  {g['count']:4d}  {g['group']}")
            p(f"        e.g. {g['example']}")
            if len(g["variants"]) > 1:
                for v in g["variants"]:
                    p(f"          {v['count']:3d}x {v['message']}")
            for v in g["snippets"]:
                p(f"          {v['count']:3d}x at: {v['source']}")

    grp("check refusals", s["check_refusal_groups"], s["check_refusal_groups_total"])
    grp("run refusals / errors", s["run_refusal_groups"])
    grp("fmt refusals", s["fmt_refusal_groups"])


# --------------------------------------------------------------------------


def main(argv=None):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the report quietly
    ap = argparse.ArgumentParser(
        usage="%(prog)s [options] CORPUS",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("corpus", type=Path, help="folder of .tir files")
    ap.add_argument("--tirc", default=str(REPO / "target" / "release" / "tirc"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--mem-limit", type=int, default=8192, help="MB per tirc process; 0 for none")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--target",
        choices=["sim", "cuda"],
        default="sim",
        help="where `tirc run` runs each function (cuda: on the GPU, with the reference there when the "
        "simulator would be slow; give --mem-limit 0, CUDA reserves much address space)",
    )
    ap.add_argument(
        "--size-value",
        type=int,
        default=64,
        help="the -D value given to each size variable tirc asks for (0: give none)",
    )
    ap.add_argument("--json", dest="json_out", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--match", default=None)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-run", dest="run", action="store_false")
    ap.add_argument("--no-fmt", dest="fmt", action="store_false")
    ap.add_argument("--keep-fmt", default=None, help="folder to keep out1/out2 of fmt non-fixed-points")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-file progress")
    cfg = ap.parse_args(argv)

    if not Path(cfg.tirc).is_file() or not os.access(cfg.tirc, os.X_OK):
        ap.error(f"no executable tirc at {cfg.tirc}")
    if not cfg.corpus.is_dir():
        ap.error(f"{cfg.corpus} is not a folder")
    files, mf = discover(cfg.corpus)
    if cfg.match:
        files = [f for f in files if cfg.match in f.name]
    if cfg.limit is not None:
        files = files[: cfg.limit]
    if not files:
        ap.error(f"no .tir files under {cfg.corpus}")

    set_mem_limit(cfg.mem_limit)
    tmp = Path(tempfile.mkdtemp(prefix="tirc-conformance-"))
    results = [None] * len(files)
    lock = threading.Lock()
    done = [0]
    t0 = time.monotonic()

    def work(i, f):
        rec = process(f, funcs_of(f, mf), cfg, tmp)
        results[i] = rec
        with lock:
            done[0] += 1
            if not cfg.quiet:
                runs = ",".join(x["outcome"] for x in rec.get("run", [])) or "-"
                fm = rec.get("fmt", {}).get("outcome", "-")
                print(
                    f"[{done[0]}/{len(files)}] {f.name}: check {rec['check']['outcome']}, run {runs}, fmt {fm}",
                    file=sys.stderr,
                    flush=True,
                )

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, cfg.jobs)) as ex:
            futs = [ex.submit(work, i, f) for i, f in enumerate(files)]
            for fu in futs:
                fu.result()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    s = summarize(results, cfg.top)
    s["seconds"] = round(time.monotonic() - t0, 1)
    print_report(s, cfg.top)
    if cfg.json_out:
        meta = {
            "tirc": cfg.tirc,
            "corpus": str(cfg.corpus),
            "timeout_s": cfg.timeout,
            "mem_limit_mb": cfg.mem_limit,
            "target": cfg.target,
            "seed": cfg.seed,
            "date": time.strftime("%Y-%m-%d"),
        }
        cfg.json_out.write_text(json.dumps({"meta": meta, "summary": s, "results": results}, indent=1) + "\n")
        print(f"\nper-file results: {cfg.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
