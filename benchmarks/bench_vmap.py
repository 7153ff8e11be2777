"""vmap: per-example gradients of an MLP and a batched scalar-loop simulation, each
against a Python loop of the same function (issue 21).

Run: ``python benchmarks/bench_vmap.py`` (Numba gets 2 threads for the prange loop;
BLAS stays on one).  Every batched result is checked against the Python loop first.

- MLP (16-32-10, tanh, softmax cross-entropy), per-example gradients of a batch of 256:
  a Python loop of ``grad(loss)`` calls, ``vmap(grad(loss), in_axes=(None, None, 0, 0))``
  (the loop form: a derivative object runs once per index), and the vectorised forward
  ``vmap(loss)`` against a loop of ``loss``.
- the same MLP's loss reading the label's logit (``z[label]``, an integer label per
  example; a loss that indexes: ``x[:, 1:]`` features too): per-example gradients as one
  batched gradient (the vectorised form indexes past the batch axis) against a Python
  loop of ``grad`` calls, rounds interleaved (``python benchmarks/bench_vmap.py index``).
- per-example Jacobians (``jacrev``) of ``tanh(x[1:] * w) * sum(x ** 2) + x[0]`` and
  Hessians of ``sum(sin(x[:-1] * x[1:])) * sum(w * x[1:]) + x[0] ** 3`` (x of 8, 256
  examples): the batched rows / Hessian columns against a loop of the object's calls
  (``python benchmarks/bench_vmap.py index`` runs these and the row above).
- simulation (``s = s * a - 0.1 * sin(s)``, 2,000 steps) for 512 parameter values:
  a Python loop of the Numba-compiled function, ``vmap(sim)`` (a prange loop) on 1 and 2
  threads, and per-example gradients ``vmap(grad(sim))`` against a loop of ``grad(sim)``.
- recurrent model (16 hidden, 50 steps, ``np.tanh(w @ h + u * x[t])``), per-example
  gradients of 256 sequences: ``vmap(grad(loss), in_axes=(None, None, 0, 0))`` (a prange
  driver calling the gradient's compiled code) on 2 threads and on 1 (the sequential
  compiled loop), against a Python loop of ``grad(loss)`` calls; rounds interleaved,
  minimums taken, the load average printed beside them (``python benchmarks/bench_vmap.py
  per-example`` runs only this one).
"""
import os
os.environ.setdefault("NUMBA_NUM_THREADS", "2")

from harness import median_time, table  # noqa: E402  (pins BLAS to one thread)

import sys  # noqa: E402
import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

import s2sgrad  # noqa: E402


def mlp_loss(w1, w2, x, label):
    h = np.tanh(x @ w1)
    z = h @ w2
    m = np.max(z)
    logp = z - m - np.log(np.sum(np.exp(z - m)))
    return -np.sum(logp * label)


def mlp_label_loss(w1, w2, x, label):
    h = np.tanh(x[1:] @ w1)
    z = h @ w2
    m = np.max(z)
    return -(z[label] - m) + np.log(np.sum(np.exp(z - m)))


def sim(a, x0):
    s = x0
    for i in range(2000):
        s = s * a - 0.1 * np.sin(s)
    return s


def mlp_rows(rng):
    w1, w2 = rng.standard_normal((16, 32)) * 0.3, rng.standard_normal((32, 10)) * 0.3
    x = rng.standard_normal((256, 16))
    labels = np.eye(10)[rng.integers(0, 10, 256)]
    grad = s2sgrad.grad(mlp_loss, (0, 1))
    per_example = s2sgrad.vmap(grad, in_axes=(None, None, 0, 0))

    def loop():
        return [grad(w1, w2, x[i], labels[i]) for i in range(x.shape[0])]
    got, want = per_example(w1, w2, x, labels), loop()
    assert np.allclose(got[0], np.stack([g[0] for g in want]), rtol=1e-12)
    forward = s2sgrad.vmap(mlp_loss, in_axes=(None, None, 0, 0))
    assert np.allclose(forward(w1, w2, x, labels),
                       [mlp_loss(w1, w2, x[i], labels[i]) for i in range(256)], rtol=1e-12)
    t_loop, t_vmap = median_time(loop), median_time(per_example, w1, w2, x, labels)
    f_loop = median_time(lambda: [mlp_loss(w1, w2, x[i], labels[i]) for i in range(256)])
    f_vmap = median_time(forward, w1, w2, x, labels)
    return [["MLP per-example gradients (256)", f"{t_loop * 1e3:.2f}", "-",
             f"{t_vmap * 1e3:.2f}", f"{t_loop / t_vmap:.2f}x", per_example.form],
            ["MLP per-example losses (256)", f"{f_loop * 1e3:.2f}", "-",
             f"{f_vmap * 1e3:.3f}", f"{f_loop / f_vmap:.0f}x", forward.form]]


def index_rows(rng, batch=256):
    """Per-example gradients of a loss that indexes: one batched gradient against a
    Python loop of ``grad`` calls (interleaved rounds, minimum and median)."""
    w1, w2 = rng.standard_normal((15, 32)) * 0.3, rng.standard_normal((32, 10)) * 0.3
    x, labels = rng.standard_normal((batch, 16)), rng.integers(0, 10, batch)
    grad = s2sgrad.grad(mlp_label_loss, (0, 1))
    per_example = s2sgrad.vmap(grad, in_axes=(None, None, 0, 0))
    got = per_example(w1, w2, x, labels)
    assert per_example.form == "vectorised", per_example.not_vectorised

    def loop():
        return [grad(w1, w2, x[i], labels[i]) for i in range(batch)]
    want = loop()
    for k in range(2):
        assert np.allclose(got[k], np.stack([g[k] for g in want]), rtol=1e-12, atol=1e-14)
    times = {"loop": [], "vmap": []}
    for _ in range(15):
        for name, fn in (("loop", loop), ("vmap", lambda: per_example(w1, w2, x, labels))):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    lo, vm = (sorted(times[k]) for k in ("loop", "vmap"))
    return [[f"MLP per-example gradients, z[label] ({batch})",
             f"{lo[0] * 1e3:.2f}-{lo[7] * 1e3:.2f}", "-",
             f"{vm[0] * 1e3:.2f}-{vm[7] * 1e3:.2f}", f"{lo[7] / vm[7]:.1f}x (medians)",
             per_example.form]]


def rows_jacobian(w, x):
    return np.tanh(x[1:] * w) * np.sum(x ** 2) + x[0]


def rows_curved(w, x):
    return np.sum(np.sin(x[:-1] * x[1:])) * np.sum(w * x[1:]) + x[0] ** 3


def jacobian_rows(rng, batch=256):
    """vmap of jacrev and hessian objects: batched against a loop of calls (interleaved
    rounds, minimum and median)."""
    w, x = rng.standard_normal(7), rng.standard_normal((batch, 8))
    rows = []
    for what, d in (("jacrev", s2sgrad.jacrev(rows_jacobian, 1)),
                    ("hessian", s2sgrad.hessian(rows_curved, 1))):
        per_example = s2sgrad.vmap(d, in_axes=(None, 0))

        def loop():
            return np.stack([d(w, row) for row in x])
        assert np.allclose(per_example(w, x), loop(), rtol=1e-12, atol=1e-12)
        assert per_example.form == "vectorised", per_example.not_vectorised
        times = {"loop": [], "vmap": []}
        for _ in range(9):
            for name, fn in (("loop", loop), ("vmap", lambda: per_example(w, x))):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        lo, vm = (sorted(times[k]) for k in ("loop", "vmap"))
        rows.append([f"per-example {what} ({batch} x 8)", f"{lo[0] * 1e3:.2f}-{lo[4] * 1e3:.2f}",
                     "-", f"{vm[0] * 1e3:.2f}-{vm[4] * 1e3:.2f}",
                     f"{lo[4] / vm[4]:.0f}x (medians)", per_example.form])
    return rows


def sim_rows(rng):
    a, x0 = rng.uniform(0.5, 0.99, 512), rng.standard_normal(512)
    batched = s2sgrad.vmap(sim)
    jitted = numba.njit(sim)
    want = np.array([jitted(a[i], x0[i]) for i in range(512)])
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    assert np.array_equal(batched(a, x0), want)
    one = median_time(batched, a, x0)
    numba.set_num_threads(threads)
    assert np.array_equal(batched(a, x0), want)        # parallel: bit for bit
    many = median_time(batched, a, x0)
    loop = median_time(lambda: [jitted(a[i], x0[i]) for i in range(512)])
    grad = s2sgrad.grad(sim, (0, 1))
    per_example = s2sgrad.vmap(grad)
    got = per_example(a[:64], x0[:64])
    ref = [grad(a[i], x0[i]) for i in range(64)]
    assert np.allclose(got[0], [r[0] for r in ref], rtol=1e-12)
    g_loop = median_time(lambda: [grad(a[i], x0[i]) for i in range(64)])
    g_vmap = median_time(per_example, a[:64], x0[:64])
    return [[f"simulation, 512 x 2000 steps ({threads} threads)", f"{loop * 1e3:.2f}",
             f"{one * 1e3:.2f}", f"{many * 1e3:.2f}", f"{loop / many:.2f}x "
             f"(prange {one / many:.2f}x)", batched.form],
            ["simulation per-example gradients (64)", f"{g_loop * 1e3:.2f}", "-",
             f"{g_vmap * 1e3:.2f}", f"{g_loop / g_vmap:.2f}x", per_example.form]]


def rnn_loss(w, u, x, y):
    h = np.zeros(w.shape[0])
    for t in range(x.shape[0]):
        h = np.tanh(w @ h + u * x[t])
    return (np.sum(h) - y) ** 2


def interleaved_minimum(calls, rounds=25):
    """Per named call, the minimum seconds over ``rounds`` rounds that run each call once
    in turn (a shared machine: each round sees the same load; the minimum is the call's
    time with the least interference).  ``calls``: name -> (setup, fn)."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, (setup, fn) in calls.items():
            setup()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def per_example_rows(rng, batch=256, steps=50, hidden=16):
    """Per-example gradients of a recurrent loop model: the prange driver over the
    gradient's compiled code on every thread, the same driver on one thread (the
    sequential compiled loop), and a Python loop of calls of the gradient."""
    w, u = rng.standard_normal((hidden, hidden)) * 0.3, rng.standard_normal(hidden)
    x, y = rng.standard_normal((batch, steps)), rng.standard_normal(batch)
    grad = s2sgrad.grad(rnn_loss, (0, 1))
    per_example = s2sgrad.vmap(grad, in_axes=(None, None, 0, 0))
    threads = numba.get_num_threads()
    loop = [grad(w, u, x[i], y[i]) for i in range(batch)]
    got = per_example(w, u, x, y)
    assert per_example.form == "numba", per_example.not_vectorised
    numba.set_num_threads(1)
    sequential = per_example(w, u, x, y)
    numba.set_num_threads(threads)
    for k in range(2):     # bit for bit: the same compiled code per example
        assert np.array_equal(got[k], np.stack([g[k] for g in loop]))
        assert np.array_equal(got[k], sequential[k])
    best = interleaved_minimum({
        "prange": (lambda: numba.set_num_threads(threads),
                   lambda: per_example(w, u, x, y)),
        "sequential": (lambda: numba.set_num_threads(1), lambda: per_example(w, u, x, y)),
        "python": (lambda: None, lambda: [grad(w, u, x[i], y[i]) for i in range(batch)]),
    })
    numba.set_num_threads(threads)
    load = os.getloadavg()[0]
    return [[f"RNN per-example gradients ({batch} x {steps} steps, {threads} threads, "
             f"load {load:.1f})", f"{best['python'] * 1e3:.2f}",
             f"{best['sequential'] * 1e3:.2f}", f"{best['prange'] * 1e3:.2f}",
             f"{best['python'] / best['prange']:.2f}x (prange "
             f"{best['sequential'] / best['prange']:.2f}x)", per_example.form]]


def main():
    rng = np.random.default_rng(0)
    only = sys.argv[1:]
    rows = per_example_rows(rng) if only == ["per-example"] else \
        index_rows(rng) + jacobian_rows(rng) if only == ["index"] else \
        mlp_rows(rng) + index_rows(rng) + jacobian_rows(rng) + sim_rows(rng) + \
        per_example_rows(rng)
    table(rows, ["workload", "Python loop ms", "vmap 1 thread ms", "vmap ms",
                 "loop / vmap", "form"])


if __name__ == "__main__":
    main()
