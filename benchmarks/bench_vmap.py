"""vmap: per-example gradients of an MLP and a batched scalar-loop simulation, each
against a Python loop of the same function (issue 21).

Run: ``python benchmarks/bench_vmap.py`` (Numba gets 2 threads for the prange loop;
BLAS stays on one).  Every batched result is checked against the Python loop first.

- MLP (16-32-10, tanh, softmax cross-entropy), per-example gradients of a batch of 256:
  a Python loop of ``grad(loss)`` calls, ``vmap(grad(loss), in_axes=(None, None, 0, 0))``
  (the loop form: a derivative object runs once per index), and the vectorised forward
  ``vmap(loss)`` against a loop of ``loss``.
- simulation (``s = s * a - 0.1 * sin(s)``, 2,000 steps) for 512 parameter values:
  a Python loop of the Numba-compiled function, ``vmap(sim)`` (a prange loop) on 1 and 2
  threads, and per-example gradients ``vmap(grad(sim))`` against a loop of ``grad(sim)``.
"""
import os
os.environ.setdefault("NUMBA_NUM_THREADS", "2")

from harness import median_time, table  # noqa: E402  (pins BLAS to one thread)

import numba  # noqa: E402
import numpy as np  # noqa: E402

import s2sgrad  # noqa: E402


def mlp_loss(w1, w2, x, label):
    h = np.tanh(x @ w1)
    z = h @ w2
    m = np.max(z)
    logp = z - m - np.log(np.sum(np.exp(z - m)))
    return -np.sum(logp * label)


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


def main():
    rng = np.random.default_rng(0)
    rows = mlp_rows(rng) + sim_rows(rng)
    table(rows, ["workload", "Python loop ms", "vmap 1 thread ms", "vmap ms",
                       "loop / vmap", "form"])


if __name__ == "__main__":
    main()
