"""The first call of a process whose cache is warm, at any array size (run by hand).

    python benchmarks/bench_warm_start.py [--root /path/to/another/checkout]

One process fills an empty cache (a compile for float64 arrays, at a small size); then,
for each size from 1e4 to 3e6, a fresh process builds the same gradient (a recurrence
over the array, compiled by Numba) and times its first call, the part of it spent
loading Numba's cached machine code (``Compiled._compile``), and a repeated call.
Importing Numba (and s2sgrad's Numba helpers) is timed apart, before the first call.
``over`` = first - load - repeated is what the first call costs beyond Numba's own
cache load (building the code: reading the source, generating, hashing); issue 20's
target is <= 0.1 s at every size (before, the first call ran
the whole generated function once as Python to learn its result types: seconds at 1e6).
``--root`` runs the children against another checkout (e.g. main, for the before).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import harness  # noqa: F401
from harness import table

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = (10_000, 100_000, 1_000_000, 3_000_000)

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
import harness
import numpy as np
import s2sgrad
from s2sgrad.backend import numba_backend
from bench_workloads import recurrence
t0 = time.perf_counter()       # what the first call would import: timed apart
import numba
from s2sgrad.backend import (numba_forward, numba_split, numba_indexing, numba_linalg,
                             numba_lists, numba_more, numba_rules, numba_support,
                             numba_surface)
imports = time.perf_counter() - t0
loading = []
compile_ = numba_backend.Compiled._compile
def timed(self, args):
    t0 = time.perf_counter()
    try:
        return compile_(self, args)
    finally:
        loading.append(time.perf_counter() - t0)
numba_backend.Compiled._compile = timed
x = np.random.default_rng(0).normal(size={n}) * 0.1
g = s2sgrad.value_and_grad(recurrence, (0, 1))
t0 = time.perf_counter()
g(0.7, x)
first = time.perf_counter() - t0
t0 = time.perf_counter()
g(0.7, x)
print(first, sum(loading), time.perf_counter() - t0, imports, g.backend)
"""


def child(n, cache, root):
    env = dict(os.environ, S2SGRAD_CACHE_DIR=cache, PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", CHILD.format(here=HERE, n=n)], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return [float(v) for v in out[:4]] + [out[4]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=ROOT, help="the checkout the children import")
    root = parser.parse_args().root
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        cold = child(100, cache, root)
        rows.append(["cold (n=100)", f"{cold[3]:.2f}", f"{cold[0]:.2f}", f"{cold[1]:.2f}",
                     f"{cold[2]:.4f}", "-", cold[4]])
        for n in SIZES:
            first, load, again, imports, backend = child(n, cache, root)
            rows.append([f"warm, n={n:.0e}", f"{imports:.3f}", f"{first:.3f}", f"{load:.3f}",
                         f"{again:.4f}", f"{first - load - again:.3f}", backend])
    table(rows, ["process", "import numba s", "first call s", "numba load s",
                 "repeated call s", "over s", "backend"])


if __name__ == "__main__":
    main()
