"""Held-out spellings of the GradBench evals: s2sgrad's speed off the spelling it was tuned on.

    PYTHONPATH=$PWD python benchmarks/gradbench/heldout.py --clock cpu        # every eval
    PYTHONPATH=$PWD python benchmarks/gradbench/heldout.py gmm kmeans         # some
    PYTHONPATH=$PWD python benchmarks/gradbench/heldout.py --json out.json    # also save
    PYTHONPATH=$PWD python benchmarks/gradbench/heldout.py --only while lse   # some spellings

run.py times one spelling per eval (the eval module's).  Users write others: loops where
ours is vectorised and the reverse, another numpy call for the same contraction, keepdims
and axis=-1, in-place updates, helpers split differently, value_and_grad, jacfwd/jacrev/
vmap for a Jacobian, nested gradients through lambdas and functools.partial, s2sgrad.jit
or not.  heldout_simple.py and heldout_loops.py write two to five of them per eval, at the
eval's standard size, each a callable of the eval's own arguments.

Same harness as run.py (imported from it): one process pinned to one CPU, BLAS, OpenMP,
Numba and XLA on one thread, a fresh s2sgrad cache folder.  Per eval: JAX's tool (the
eval's spelling, jit-compiled) and s2sgrad's own spelling are run first; then every
held-out spelling is built and called once (first call timed, fused kernels waited for),
its result checked against JAX's to 1e-10 (relative to the result's largest element)
and only then timed.  The table gives each spelling's best time, its ratio to JAX and to
s2sgrad's own spelling, its ratio to its own numpy forward where the spelling changes
the objective (``FORWARDS``), and ``refused`` / ``WRONG`` with the reason listed below.
A cliff (``<-``) is a spelling that is refused, wrong, or over 2x our spelling's time.
"""
import argparse
import json
import sys
import time

import run  # noqa: E402  (pins threads and the cache folder before numpy and s2sgrad)
from run import EVALS, agree, best_time, harness, ms, run_tool  # noqa: E402

import numpy as np  # noqa: E402

import heldout_loops  # noqa: E402
import heldout_simple  # noqa: E402

SPELLINGS = {**heldout_simple.SPELLINGS, **heldout_loops.SPELLINGS}
FORWARDS = {**heldout_simple.FORWARDS, **heldout_loops.FORWARDS}
TOLERANCE = 1e-10


def wait_for_kernels():
    from s2sgrad.runtime.fused import wait_all
    wait_all()


def largest_error(ours, reference):
    from common import as_arrays
    a, b = as_arrays(ours), as_arrays(reference)
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return f"result structure {[x.shape for x in a]} vs JAX {[y.shape for y in b]}"
    worst = max(float(np.max(np.abs(x - y))) / max(1.0, float(np.max(np.abs(y))))
                for x, y in zip(a, b))
    return f"largest error {worst:.2e} relative to the result's size"


def timed(name, builder, args, reference, forward=None):
    """One spelling's row: build, first call, check against ``reference``, time."""
    row = {"spelling": name}
    out = run_tool(builder, args)
    if isinstance(out, str):
        row["refused"] = out
        return row
    first, result, fn = out
    t0 = time.perf_counter()
    wait_for_kernels()
    row["first"], row["compiling"] = first, time.perf_counter() - t0
    if reference is not None and not agree(result, reference, rtol=TOLERANCE):
        row["wrong"] = largest_error(result, reference)
        return row
    row["time"] = best_time(fn, args)
    if forward is not None:
        row["forward"] = best_time(forward, args)
    return row


def measure(name, only=()):
    """The JAX row, our spelling's row and every held-out spelling's row of one eval
    (only those whose name contains one of ``only``, where given)."""
    module = __import__(name)
    args = module.inputs()
    jax = run_tool(module.tools["jax"], args)
    reference = None if isinstance(jax, str) else jax[1]
    rows = [{"spelling": "JAX (eval's spelling)", "time": best_time(jax[2], args)}
            if reference is not None else {"spelling": "JAX", "refused": jax}]
    rows.append(timed("s2sgrad (eval's spelling)", module.tools["s2sgrad"], args, reference,
                      module.forward))
    forwards = FORWARDS.get(name, {})
    for spelling, builder in SPELLINGS[name].items():
        if only and not any(part in spelling for part in only):
            continue
        rows.append(timed(spelling, builder, args, reference, forwards.get(spelling)))
        print(name, rows[-1], file=sys.stderr, flush=True)
    return {"eval": name, "rows": rows}


def report(evals):
    header = ["eval", "spelling", "ms", "/ JAX", "/ ours", "/ its fwd", "first s", ""]
    lines, notes = [], []
    for ev in evals:
        jax, ours = ev["rows"][0].get("time"), ev["rows"][1].get("time")
        for row in ev["rows"]:
            t = row.get("time")
            cells = [ev["eval"], row["spelling"], ms(t) if t else
                     ("refused" if "refused" in row else "WRONG")]
            cells.append(f"{t / jax:.2f}x" if t and jax else "-")
            cells.append(f"{t / ours:.2f}x" if t and ours else "-")
            cells.append(f"{t / row['forward']:.1f}x" if t and row.get("forward") else "-")
            first = row.get("first")
            cells.append("-" if first is None else f"{first:.2f}" + (
                f" (+{row['compiling']:.2f})" if row.get("compiling", 0) >= 0.01 else ""))
            cliff = not t or (ours and t > 2 * ours and row is not ev["rows"][1])
            cells.append("<-" if cliff and row is not ev["rows"][0] else "")
            lines.append(cells)
            for why in ("refused", "wrong"):
                if why in row:
                    notes.append(f"{ev['eval']}: {row['spelling']}: {why}: {row[why]}")
    harness.table(lines, header)
    for note in notes:
        print(note)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evals", nargs="*", help="names (default: all)")
    parser.add_argument("--clock", choices=sorted(run.CLOCKS), default="wall",
                        help="time repeated calls by the wall clock or the process's CPU time")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--only", action="append", default=[],
                        help="time only the spellings whose name contains this (repeatable)")
    options = parser.parse_args()
    run.clock = run.CLOCKS[options.clock]
    names = [e for e in EVALS if not options.evals or e in options.evals]
    evals = [measure(name, options.only) for name in names]
    report(evals)
    if options.json:
        with open(options.json, "w") as out:
            json.dump(evals, out, indent=1, default=str)


if __name__ == "__main__":
    main()
