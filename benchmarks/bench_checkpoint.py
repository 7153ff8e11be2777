"""memory_limit: peak memory and time of checkpointed gradients against the full tape.

    python benchmarks/bench_checkpoint.py            # the table of the README
    python benchmarks/bench_checkpoint.py --quick    # smaller sizes

Two long loops: a 1-D heat stencil (N cells, T steps: the full tape keeps every step's
state, N * 8 * T bytes) and a scalar recurrence ``h = tanh(w * h + x[i])`` (8 bytes a
step).  Each configuration runs in a fresh Python process (threads pinned to 1), with
the generated code already in a shared cache folder (a first process builds and
compiles it): the process calls the gradient once on a short run (loading the code),
reads its peak resident memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), then
times the long gradient (median of 5 calls) and reads the peak again.  The memory
column is the growth of the peak over the short run: what the long run kept (tape or
snapshots, the gradient's own arrays, numpy's temporaries).  Every checkpointed
gradient is compared with the full-tape one first (bit for bit).
"""
import json
import os
import subprocess
import sys
import tempfile

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

from harness import median_time, table


def heat(u, alpha, steps):
    for t in range(steps):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un
    return np.sum(u * u)


def recurrence(x, w):
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
    return h


def workload(name, quick):
    """(function, short arguments, long arguments, the full tape's bytes, state bytes)."""
    if name == "heat":
        n, steps = (2_000, 1_000) if quick else (10_000, 4_000)
        u = np.sin(np.linspace(0.0, 3.0, n)) ** 2
        return heat, (u, 0.2, 2), (u, 0.2, steps), n * 8 * steps, n * 8
    n = 1_000_000 if quick else 10_000_000
    x = np.sin(np.arange(n) * 0.001)
    return recurrence, (x[:10], 0.7), (x, 0.7), n * 8, 8


def one(name, limit, quick):
    """Run in a fresh process: the peak growth, the median time and the result."""
    import resource

    import s2sgrad
    from s2sgrad.errors import MemoryLimitError
    fn, short, long, _, _ = workload(name, quick)
    g = s2sgrad.value_and_grad(fn, memory_limit=limit) if limit else s2sgrad.value_and_grad(fn)
    g(*short)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    value, grad = g(*long)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds = median_time(g, *long, repeat=5, min_time=0)
    digest = float(np.sum(grad * np.arange(grad.size)))
    os.environ["S2SGRAD_BACKEND"] = "python"   # one step's tape, as the driver measures it
    try:
        s2sgrad.value_and_grad(fn, memory_limit=1)(*short)
    except MemoryLimitError as exc:
        tape = exc.tape_bytes
    return {"grow_kb": after - before, "peak_kb": after, "seconds": seconds, "value":
            float(value), "digest": digest, "backend": g.backend, "tape_bytes": tape}


def run(name, limit, quick, cache):
    env = dict(os.environ, S2SGRAD_CACHE_DIR=cache, S2SGRAD_QUIET="1")
    out = subprocess.run([sys.executable, __file__, "--one", name, str(limit or 0)] +
                         (["--quick"] if quick else []), env=env, capture_output=True,
                         text=True, check=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(quick):
    from s2sgrad.runtime import checkpoint as ck
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for name in ("heat", "recurrence"):
            _, _, long, tape, state = workload(name, quick)
            n = long[2] if name == "heat" else long[0].shape[0]
            label = (f"heat 1-D, {long[0].shape[0]:,} cells x {n:,} steps" if name == "heat"
                     else f"tanh recurrence, {n:,} steps")
            limits = [tape // 10, tape // 30, tape // 100] if name == "heat" else \
                [tape // 10, tape // 1000, tape // 100_000]
            run(name, None, quick, cache)      # build and compile once, in the cache
            for limit in limits:
                run(name, limit, quick, cache)
            full = run(name, None, quick, cache)
            rows.append([label, "full tape", f"{tape / 1e6:.1f} MB",
                         f"{full['grow_kb'] / 1024:.1f} MB", f"{full['seconds'] * 1e3:.0f} ms",
                         "1.00x", full["backend"]])
            for limit in limits:
                got = run(name, limit, quick, cache)
                assert got["value"] == full["value"] and got["digest"] == full["digest"], name
                step_tape = got["tape_bytes"]
                slots = ck.slots_for(n, limit, state, step_tape, "")
                rows.append([
                    "", f"{limit / 1e6:.4g} MB: {slots} snapshots, r = "
                    f"{ck.repetitions(n, slots)}",
                    f"{(slots * (state + 8) + step_tape) / 1e6:.2f} MB",
                    f"{got['grow_kb'] / 1024:.1f} MB", f"{got['seconds'] * 1e3:.0f} ms",
                    f"{got['seconds'] / full['seconds']:.2f}x", got["backend"]])
    table(rows, ["loop", "memory_limit", "kept (counted by the driver)", "peak RSS growth",
                 "time", "vs full tape", "backend"])


if __name__ == "__main__":
    if "--one" in sys.argv:
        k = sys.argv.index("--one")
        print(json.dumps(one(sys.argv[k + 1], int(sys.argv[k + 2]) or None,
                             "--quick" in sys.argv)))
    else:
        main("--quick" in sys.argv)
