"""Shared pieces of the benchmarks (run by hand, never by the test suite).

Every benchmark pins BLAS, OpenMP and Numba to one thread *before* numpy is
imported (import this module first), times with medians of repeated calls,
and reports ratios against a baseline timed in the same run, so that figures
from a loaded or a faster machine stay comparable.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics  # noqa: E402
import time  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def median_time(fn, *args, repeat=11, min_time=0.2):
    """Median seconds of one call of ``fn(*args)`` (after one warm-up call).

    Calls are repeated ``repeat`` times, or more while the total stays under
    ``min_time`` seconds, so that fast calls are not dominated by timer noise."""
    fn(*args)
    times = []
    start = time.perf_counter()
    while len(times) < repeat or (time.perf_counter() - start < min_time and len(times) < 1000):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def scalar_loss(fn, args, position, index, eps):
    """``fn`` at ``args`` with element ``index`` of argument ``position`` moved by ``eps``."""
    moved = list(args)
    value = args[position]
    if np.ndim(value) == 0:
        moved[position] = float(value) + eps
    else:
        array = np.array(value, dtype=np.float64)
        array[index] += eps
        moved[position] = array
    return float(fn(*moved))


def check_against_differences(fn, args, positions, grads, samples=4, eps=1e-6, rtol=1e-5):
    """Compare a few elements of each gradient with central finite differences of ``fn``.

    Raises AssertionError naming the argument and element that disagree."""
    rng = np.random.default_rng(1)
    for position, grad in zip(positions, grads):
        grad = np.asarray(grad, dtype=np.float64)
        indices = [()] if grad.ndim == 0 else [
            tuple(int(rng.integers(0, n)) for n in grad.shape) for _ in range(samples)]
        for index in indices:
            numeric = (scalar_loss(fn, args, position, index, eps)
                       - scalar_loss(fn, args, position, index, -eps)) / (2 * eps)
            analytic = float(grad[index])
            scale = max(1.0, abs(numeric), abs(analytic))
            assert abs(numeric - analytic) <= rtol * scale, (
                f"{fn.__name__}: argument {position} element {index}: "
                f"s2sgrad {analytic!r}, finite differences {numeric!r}")


def time_gradient(fn, args, positions):
    """s2sgrad's ``value_and_grad`` of ``fn`` against ``fn`` compiled by Numba: builds it,
    times its first call (generation and compile included), checks the gradients against
    central finite differences and the value against Numba's, then times both.  Gives
    ``(generated, first call s, value, gradients, Numba forward s, s2sgrad s)``."""
    import numba
    import s2sgrad
    forward = numba.njit(fn)
    generated = s2sgrad.value_and_grad(fn, positions)
    t0 = time.perf_counter()
    value, grads = generated(*args)
    first = time.perf_counter() - t0
    grads = grads if isinstance(grads, tuple) else (grads,)
    check_against_differences(fn, args, positions, grads)
    np.testing.assert_allclose(value, forward(*args), rtol=1e-10)
    return (generated, first, value, grads, median_time(forward, *args),
            median_time(generated, *args))


def table(rows, headers):
    """Print ``rows`` (lists of cells) as a Markdown table and return its text."""
    cells = [[str(c) for c in row] for row in [headers] + rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    text = "\n".join(lines)
    print(text)
    return text
