"""First-call times in fresh processes: cold (empty cache) and warm (run by hand).

    python benchmarks/bench_compile.py

For each case a new Python process is started twice with its own empty
S2SGRAD_CACHE_DIR: the first process generates and compiles (cold), the
second finds the cache (warm).  The time reported is that of the first
``value_and_grad`` call inside the process (imports excluded), and, as the
yardstick for loop code, the time Numba needs to compile the hand-written
adjoint of the same loop in a fresh process with no Numba cache.

Issue 9's targets: loop-free code ready in under 1 s cold; loop code within
2x of compiling the hand-written adjoint.
"""
import os
import subprocess
import sys
import tempfile

import harness  # noqa: F401
from harness import table

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = {
    "MLP (loop-free)": ("bench_mlp", "mlp_loss", "arguments()", "(0, 1, 2, 3, 4, 5)", None),
    "recurrence (loop)": ("bench_workloads", "recurrence",
                          "(0.7, np.random.default_rng(0).normal(size=10_000))", "(0, 1)",
                          "recurrence_adjoint"),
    "heat 1-D (nested loops)": ("bench_workloads", "heat_copy_top",
                                "(np.random.default_rng(0).normal(size=500), 0.2)", "(0, 1)",
                                "heat_adjoint"),
}

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
import harness
import numpy as np
import s2sgrad
from {module} import *
args = {args}
g = s2sgrad.value_and_grad({fn}, {positions})
t0 = time.perf_counter()
g(*args)
print(time.perf_counter() - t0, g.backend)
"""

HAND = """
import sys, time
sys.path.insert(0, {here!r})
import harness
import numba
import numpy as np
import {module} as m
args = {args}
fn = numba.njit(m.{hand}.py_func)
t0 = time.perf_counter()
fn(*args)
print(time.perf_counter() - t0)
"""


def child(code, cache):
    env = dict(os.environ, S2SGRAD_CACHE_DIR=cache, NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return out


def main():
    rows = []
    for name, (module, fn, args, positions, hand) in CASES.items():
        with tempfile.TemporaryDirectory() as cache:
            code = CHILD.format(here=HERE, module=module, fn=fn, args=args, positions=positions)
            cold, backend = child(code, cache)
            warm, _ = child(code, cache)
        hand_time = "-"
        if hand:
            with tempfile.TemporaryDirectory() as cache:
                hand_time = float(child(HAND.format(here=HERE, module=module, hand=hand,
                                                    args=args), cache)[0])
        rows.append([name, backend, f"{float(cold):.2f}", f"{float(warm):.2f}",
                     hand_time if hand_time == "-" else f"{hand_time:.2f}",
                     "-" if hand_time == "-" else f"{float(cold) / hand_time:.1f}x"])
    table(rows, ["first call", "backend", "cold s", "warm s", "numba hand adjoint s",
                 "cold vs hand"])


if __name__ == "__main__":
    main()
