"""GradBench's ht (hand tracking) Jacobian in plain numpy, against JAX (run by hand).

    python benchmarks/bench_jacobian.py [--points 100]

The objective is the GradBench eval's (``gradbench/ht.py``: a 22-bone hand posed by 26
parameters, the error of ``points`` against their skinned vertices; the "simple" case,
no ``us``), on synthetic data of the standard model's sizes (544 vertices, 100
correspondences: a 300 x 26 Jacobian).  Times, single
threaded: s2sgrad's ``jacfwd``, ``jacrev`` and ``jacobian`` (which picks forward mode
for this tall Jacobian), and ``jax.jit`` of ``jax.jacfwd`` / ``jax.jacrev`` of the same
code written with ``jax.numpy`` (float64); first calls (generation and Numba compile,
or JAX's trace and compile) and medians of repeated calls.
"""
import argparse
import os
import sys
import time

import harness  # noqa: F401  (one thread, before numpy)
from harness import median_time, table

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import s2sgrad  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gradbench"))
from ht import data, ht_objective, jax_objective  # noqa: E402  (the eval's module)


def first_and_median(fn, *args):
    start = time.perf_counter()
    result = np.asarray(fn(*args))
    first = time.perf_counter() - start
    return result, first, median_time(fn, *args, repeat=7)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    theta, rest = data(n_points=parser.parse_args().points)
    rows, reference = [], None
    for name in ("jacfwd", "jacrev", "jacobian"):
        jac = getattr(s2sgrad, name)(ht_objective)
        result, first, median = first_and_median(jac, theta, *rest)
        if reference is None:
            reference = result
        assert np.allclose(result, reference, rtol=1e-10, atol=1e-12), name
        rows.append([f"s2sgrad {name}", jac.backend, f"{first:.2f}", f"{median * 1e3:.2f}"])
    peer = jax_objective()
    if peer is not None:
        jax, objective = peer
        for name in ("jacfwd", "jacrev"):
            jac = jax.jit(getattr(jax, name)(objective))
            args = (theta, *rest[1:])
            result, first, median = first_and_median(
                lambda *a: jac(*a).block_until_ready(), *args)
            assert np.allclose(result, reference, rtol=1e-10, atol=1e-12), name
            rows.append([f"jax.jit({name})", "xla", f"{first:.2f}", f"{median * 1e3:.2f}"])
    out = reference.shape
    table(rows, [f"ht Jacobian {out[0]} x {out[1]}", "backend", "first call s",
                 "median ms"])


if __name__ == "__main__":
    main()
