"""Where Numba's time goes on a cold first call (run by hand).

    python benchmarks/bench_cold_compile.py [lstm|ode|gblstm ...]
    TOP=20 python benchmarks/bench_cold_compile.py gblstm     # list 20 functions

Each case runs in a fresh process with an empty cache: a 15-step LSTM
(``bench_lstm.lstm_loss``, H=16, D=8), GradBench's ode eval in plain numpy
(``ode_last``: fourth-order Runge-Kutta over n=10000 values, 100 steps, the
gradient of the last value; from the eval's README and its reference, ode.hpp) and,
on request, GradBench's lstm eval (``gblstm``: two layers, 1024 characters, rows
written in place; what ``gradbench/run.py lstm`` times) and ``adlstm``, the same eval in
its held-out ADBench spelling (``heldout_loops.lstm_adbench``: a layer function called per
layer, rows assigned from its results; what ``gradbench/heldout.py lstm`` times).
It prints the first call's time; the generated module's size; how many
functions Numba compiled (the generated one and every helper and numpy
implementation it pulled in); Numba's pass times for the generated function
(type inference, lowering); and the functions that took the most time to
compile, excluding the time of what they called (``numba.core.event``); then the first
call of a second process with the cache the first one filled (warm).  Times are wall
clock and the process's CPU time (the compile is single-threaded: on a loaded machine the
CPU time is the steadier figure).
Issue 20's target: <= 5 s (``jax.jit(grad)`` of the LSTM: 5.2 s).
"""
import collections
import os
import subprocess
import sys
import tempfile

import harness  # noqa: F401  (one thread, before numpy)

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def case(which):
    """(gradient, arguments) of a case."""
    import s2sgrad
    from bench_lstm import lstm_loss
    sys.path.insert(0, os.path.join(HERE, "gradbench"))
    from ode import ode_last          # GradBench's ode eval, as benchmarks/gradbench runs it
    rng = np.random.default_rng(0)
    if which == "gblstm":                 # GradBench's lstm eval at its standard size
        import lstm
        return s2sgrad.value_and_grad(lstm.lstm_objective, (0, 1)), lstm.inputs()
    if which == "adlstm":                 # its held-out ADBench spelling (heldout_loops.py)
        import lstm
        import heldout_loops
        return s2sgrad.value_and_grad(heldout_loops.lstm_adbench, (0, 1)), lstm.inputs()
    if which == "lstm":
        h, d, t = 16, 8, 15
        args = (rng.standard_normal((4 * h, d + h)) * 0.3, rng.standard_normal(4 * h) * 0.1,
                rng.standard_normal((t, d)))
        return s2sgrad.value_and_grad(lstm_loss, (0, 1)), args
    return s2sgrad.value_and_grad(ode_last, 0), (rng.random(10_000), 100)


def _name(data):
    dispatcher = (data or {}).get("dispatcher")
    fn = getattr(dispatcher, "py_func", None)
    if fn is None:
        return str(dispatcher)
    return f"{fn.__module__}.{fn.__qualname__}".replace(".<locals>", "")


def measure(which):
    """Run one case cold in this process and print where the time went."""
    import time
    from numba.core import event
    grad, args = case(which)
    with event.install_recorder("numba:compile") as recorder:
        start, cpu = time.perf_counter(), time.process_time()
        grad(*args)
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
    inclusive, inner, count, stack = collections.Counter(), collections.Counter(), \
        collections.Counter(), []
    for stamp, ev in recorder.buffer:
        if ev.is_start:
            stack.append((_name(ev.data), stamp))
            continue
        name, began = stack.pop()
        inclusive[name] += stamp - began
        count[name] += 1
        if stack:
            inner[stack[-1][0]] += stamp - began
    exclusive = {k: inclusive[k] - inner[k] for k in inclusive}
    compiled = grad._compiled
    passes = collections.Counter()
    for pipeline in compiled._jitted.get_metadata(compiled._jitted.signatures[0])[
            "pipeline_times"].values():
        for name, t in pipeline.items():
            passes[name.split("_", 1)[1]] += t.init + t.run + t.finalize
    print(f"{which}: first call {total:.2f} s ({cpu:.2f} s of CPU; {grad.backend}); generated "
          f"{len(grad.source.splitlines())} lines, "
          f"{sum(line.strip().endswith('= []') for line in grad.source.splitlines())} "
          f"list tapes; Numba compiled {len(count)} functions "
          f"({sum(count.values())} signatures)")
    print("  passes of the generated function: " + ", ".join(
        f"{k} {v:.2f} s" for k, v in passes.most_common(3)))
    for name, seconds in sorted(exclusive.items(), key=lambda kv: -kv[1])[:int(os.environ.get("TOP", "8"))]:
        print(f"  {seconds:6.2f} s  x{count[name]}  {name}")


def main():
    if len(sys.argv) > 2 and sys.argv[1] in ("--child", "--warm"):
        (measure if sys.argv[1] == "--child" else warm)(sys.argv[2])
        return
    for which in sys.argv[1:] or ["lstm", "ode"]:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, S2SGRAD_CACHE_DIR=cache, S2SGRAD_QUIET="1")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--child", which],
                           env=env, check=True, cwd=HERE)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--warm", which],
                           env=env, check=True, cwd=HERE)


def warm(which):
    """The first call of a second process, with the cache the first one filled."""
    import time
    grad, args = case(which)
    start, cpu = time.perf_counter(), time.process_time()
    grad(*args)
    print(f"  warm cache, a new process: first call {time.perf_counter() - start:.2f} s "
          f"({time.process_time() - cpu:.2f} s of CPU)")


if __name__ == "__main__":
    main()
