"""The GradBench suite: s2sgrad against JAX and autograd on GradBench's evals (run by hand).

    pip install -e '.[bench]'                      # jax, autograd
    PYTHONPATH=$PWD python benchmarks/gradbench/run.py    # every eval, this checkout's s2sgrad
    python benchmarks/gradbench/run.py gmm kmeans  # some
    python benchmarks/gradbench/run.py --rounds 3  # the minimum over three rounds
    python benchmarks/gradbench/run.py --clock cpu # the process's CPU time, not wall time

For every eval (one module each here, written in plain numpy from the eval's README;
see common.py for how JAX and autograd run the same spelling), in one process pinned to
one CPU with BLAS, OpenMP, Numba and XLA on one thread: the numpy forward, then each
tool's derivative, built once, its first call timed (s2sgrad's includes generating the
code into a fresh cache folder and any Numba compile; JAX's the jit compile), checked
against JAX's result (or autograd's where JAX did not run), then the best time of
repeated calls (and of the other spellings an eval lists in ``extra_tools``, printed
under the table).  A tool that refuses an eval's spelling is listed with its error.  The
table gives milliseconds and the ratios s2sgrad / JAX and s2sgrad / its numpy forward,
and the geometric mean of s2sgrad / JAX.  ``--clock cpu`` times the repeated calls by
the CPU time of the process (``time.process_time``: every thread, JAX's included) instead
of the wall clock: on a machine shared with other jobs a call of 20 ms is preempted
several times, and its wall time measures the other jobs more than the call.  s2sgrad's
fused elementwise kernels compile in a thread of their own after its first call (which
runs numpy's expressions meanwhile): the repeated calls are timed once they are compiled,
and the first-call column adds how long that took, ``0.30 (+2.91) / 0.47``.
"""
import argparse
import importlib
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
# XLA's Eigen work on one thread; the affinity below keeps every other thread on one CPU
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("S2SGRAD_QUIET", "1")
os.environ["S2SGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="s2sgrad-gradbench-")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, [sorted(os.sched_getaffinity(0))[0]])

import harness  # noqa: E402,F401  (pins BLAS/OpenMP/Numba threads before numpy)
import numpy as np  # noqa: E402

from common import as_arrays  # noqa: E402

EVALS = ["lse", "llsq", "gmm", "kmeans", "ba", "ht", "ode", "lstm", "particle", "saddle"]
TOOLS = ["s2sgrad", "jax", "autograd"]


#: the clock of the repeated calls (``--clock``)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]


def best_time(fn, args, budget=1.0, most=200):
    """The fastest of repeated calls of ``fn(*args)`` by ``clock``: at least 3, more
    while under ``budget`` seconds of wall time (a call over ``budget`` is timed once)."""
    times = []
    start = time.perf_counter()
    while len(times) < most and (len(times) < 3 or time.perf_counter() - start < budget):
        t0 = clock()
        fn(*args)
        times.append(clock() - t0)
        if times[-1] > budget:
            break
    return min(times)


def run_tool(builder, args):
    """``(first call s, result, callable)`` of one tool, or the error it raised."""
    try:
        t0 = time.perf_counter()
        fn = builder()
        result = fn(*args)
        return time.perf_counter() - t0, result, fn
    except Exception as error:  # a refusal is a result of the benchmark
        return f"{type(error).__name__}: {str(error).splitlines()[0][:150]}"


def agree(ours, reference, rtol=1e-6):
    a, b = as_arrays(ours), as_arrays(reference)
    if len(a) != len(b):
        return False
    return all(np.allclose(x, y, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(y)))))
               for x, y in zip(a, b))


def measure(name, try_all=False):
    """One eval's row: times (s), first calls (s), the check, refusals.  A tool the
    eval's module lists in ``SKIP`` (one known not to finish) is not run unless
    ``try_all``; its reason goes into the refusals."""
    module = importlib.import_module(name)
    args = module.inputs()
    forward = module.forward and best_time(module.forward, args)
    row = {"eval": name, "size": module.SIZE, "forward": forward,
           "times": {}, "first": {}, "refused": {}}
    results = {}
    skip = {} if try_all else getattr(module, "SKIP", {})
    for tool in TOOLS:
        out = f"not run: {skip[tool]}" if tool in skip else run_tool(module.tools[tool], args)
        if isinstance(out, str):
            row["refused"][tool] = out
            continue
        row["first"][tool], results[tool], fn = out
        if tool == "s2sgrad":       # fused kernels compile in a thread: time it apart
            t0 = time.perf_counter()
            from s2sgrad.runtime.fused import wait_all
            wait_all()
            row["compiling"] = time.perf_counter() - t0
        row["times"][tool] = best_time(fn, args)
    for tool, builder in getattr(module, "extra_tools", {}).items():   # other spellings
        out = run_tool(builder, args)
        row.setdefault("extra", {})[tool] = out if isinstance(out, str) else \
            best_time(out[2], args)
    reference = next((t for t in ("jax", "autograd") if t in results), None)
    if "s2sgrad" in results and reference:
        row["check"] = ("agrees with " + reference if agree(results["s2sgrad"], results[reference])
                        else "DISAGREES with " + reference)
    else:
        row["check"] = "not checked"
    return row


def ms(seconds):
    return f"{seconds * 1e3:.3g}" if seconds is not None else "-"


def report(rows):
    header = ["eval", "size", "numpy fwd ms", "s2sgrad ms", "JAX ms", "autograd ms",
              "s2sgrad / JAX", "s2sgrad / fwd", "first call s2sgrad / JAX s", "check"]
    lines, ratios = [], []
    for row in rows:
        t = row["times"]
        cells = [row["eval"], row["size"], ms(row["forward"])]
        cells += [ms(t[k]) if k in t else "refused" for k in TOOLS]
        if "s2sgrad" in t and "jax" in t:
            ratios.append(t["s2sgrad"] / t["jax"])
            cells.append(f"{ratios[-1]:.2f}x")
        else:
            cells.append("-")
        cells.append(f"{t['s2sgrad'] / row['forward']:.1f}x"
                     if "s2sgrad" in t and row["forward"] else "-")
        f = row["first"]
        first = " / ".join(f"{f[k]:.2f}" if k in f else "-" for k in ("s2sgrad", "jax"))
        if row.get("compiling", 0) >= 0.01:     # then its fused kernels compiled this long
            first = first.replace(" /", f" (+{row['compiling']:.2f})" + " /", 1)
        cells.append(first)
        cells.append(row["check"])
        lines.append(cells)
    harness.table(lines, header)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\ngeometric mean of s2sgrad / JAX over {len(ratios)} evals: {geo:.2f}x")
    for row in rows:
        for tool, t in row.get("extra", {}).items():
            jax = row["times"].get("jax")
            print(f"{row['eval']}: {tool}: " + (t if isinstance(t, str) else
                  f"{ms(t)} ms" + (f" ({t / jax:.2f}x JAX)" if jax else "")))
    for row in rows:
        for tool, why in row["refused"].items():
            print(f"{row['eval']}: {tool} refused: {why}")


def merge(rounds):
    """Per eval, the minimum over rounds of every time."""
    merged = rounds[0]
    for other in rounds[1:]:
        for row, again in zip(merged, other):
            row["forward"] = row["forward"] and min(row["forward"], again["forward"])
            for tool, t in again["times"].items():
                row["times"][tool] = min(row["times"].get(tool, t), t)
            for tool, t in again.get("extra", {}).items():
                kept = row.setdefault("extra", {}).get(tool, t)
                row["extra"][tool] = t if isinstance(kept, str) else \
                    kept if isinstance(t, str) else min(kept, t)
    return merged


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evals", nargs="*", help="names (default: all)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat the whole suite, keeping each time's minimum")
    parser.add_argument("--all", action="store_true",
                        help="also run the tools an eval lists as not finishing (SKIP)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="time repeated calls by the wall clock or the process's CPU time")
    options = parser.parse_args()
    global clock
    clock = CLOCKS[options.clock]
    names = [e for e in EVALS if not options.evals or e in options.evals]
    rounds = []
    for _ in range(options.rounds):
        rounds.append([])
        for name in names:
            rounds[-1].append(measure(name, options.all))
            print(name, {k: round(v * 1e3, 3) for k, v in rounds[-1][-1]["times"].items()},
                  file=sys.stderr, flush=True)     # progress, in case the run is cut short
    report(merge(rounds))


if __name__ == "__main__":
    main()
