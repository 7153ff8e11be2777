"""GradBench's ht (hand tracking) Jacobian in plain numpy, against JAX (run by hand).

    python benchmarks/bench_jacobian.py [--points 100]

The objective is the GradBench eval's (``gradbench/ht.py``: a 22-bone hand posed by 26
parameters, the error of ``points`` against their skinned vertices; the "simple" case,
no ``us``), on synthetic data of the standard model's sizes (544 vertices, 100
correspondences: a 300 x 26 Jacobian).  Times, single
threaded: s2sgrad's ``jacfwd``, ``jacrev`` and ``jacobian`` (which picks forward mode
for this tall Jacobian), and ``jax.jit`` of ``jax.jacfwd`` / ``jax.jacrev`` of the same
code written with ``jax.numpy`` (float64); first calls (generation and Numba compile,
or JAX's trace and compile) and the best call over interleaved rounds (``--rounds``), with
``jacfwd``'s one-pass-per-direction code beside its batched sweep.
"""
import argparse
import os
import sys
import time

import harness  # noqa: F401  (one thread, before numpy)
from harness import table

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import s2sgrad  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gradbench"))
from ht import data, ht_objective, jax_objective  # noqa: E402  (the eval's module)


def first_call(fn, *args):
    start = time.perf_counter()
    result = np.asarray(fn(*args))
    return result, time.perf_counter() - start


def best_of_rounds(runners, args, rounds, calls=5):
    """The fastest call of each runner, over ``rounds`` rounds that take the runners in
    turn (interleaved: a change of the machine's load touches all of them alike)."""
    best = {name: float("inf") for name in runners}
    for _ in range(rounds):
        for name, fn in runners.items():
            for _ in range(calls):
                t0 = time.perf_counter()
                fn(*args[name])
                best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    theta, rest = data(n_points=options.points)
    runners, args, rows, first, reference = {}, {}, {}, {}, None
    for name in ("jacfwd", "jacrev", "jacobian"):
        jac = getattr(s2sgrad, name)(ht_objective)
        result, first[name] = first_call(jac, theta, *rest)
        reference = result if reference is None else reference
        assert np.allclose(result, reference, rtol=1e-10, atol=1e-12), name
        runners[name], args[name], rows[name] = jac, (theta, *rest), jac.backend
        if name == "jacfwd" and jac.last is jac.batched:     # the per-direction code too
            per = jac.forward
            result, first["jacfwd, one pass per direction"] = first_call(per, theta, *rest)
            assert np.allclose(result, reference, rtol=1e-10, atol=1e-12), "per direction"
            runners["jacfwd, one pass per direction"] = per
            args["jacfwd, one pass per direction"] = (theta, *rest)
            rows["jacfwd, one pass per direction"] = per.backend
    peer = jax_objective()
    if peer is not None:
        jax, objective = peer
        for name in ("jacfwd", "jacrev"):
            jac = jax.jit(getattr(jax, name)(objective))
            label = f"jax.jit({name})"
            run = (lambda j: lambda *a: j(*a).block_until_ready())(jac)
            result, first[label] = first_call(run, theta, *rest[1:])
            assert np.allclose(result, reference, rtol=1e-10, atol=1e-12), name
            runners[label], args[label], rows[label] = run, (theta, *rest[1:]), "xla"
    best = best_of_rounds(runners, args, options.rounds)
    out = reference.shape
    table([[("" if name.startswith("jax") else "s2sgrad ") + name, rows[name],
             f"{first[name]:.2f}", f"{best[name] * 1e3:.2f}"] for name in runners],
          [f"ht Jacobian {out[0]} x {out[1]}", "backend", "first call s",
           "best ms (interleaved rounds)"])


if __name__ == "__main__":
    main()
