"""An LSTM whose gate slices take their bounds from ``.shape`` (run by hand).

    python benchmarks/bench_lstm.py            # Numba where it compiles
    S2SGRAD_BACKEND=python python benchmarks/bench_lstm.py

Prints the first-call time of this process (code generation, Numba compile or
loading its cache), the backend with its fallback reason, and the median time
of one value-and-gradient call.  Run it twice to see the start of a process
whose cache is warm.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import s2sgrad  # noqa: E402


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_loss(W, b, xs):
    H = b.shape[0] // 4
    h = np.zeros(H)
    c = np.zeros(H)
    for t in range(xs.shape[0]):
        z = W @ np.concatenate((xs[t], h)) + b
        i = sigmoid(z[:H])
        f = sigmoid(z[H:2 * H])
        o = sigmoid(z[2 * H:3 * H])
        g = np.tanh(z[3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h * h)


def main():
    rng = np.random.default_rng(0)
    H, D, T = 16, 8, 50
    W = rng.standard_normal((4 * H, D + H)) * 0.3
    b = rng.standard_normal(4 * H) * 0.1
    xs = rng.standard_normal((T, D))
    start = time.perf_counter()
    g = s2sgrad.value_and_grad(lstm_loss, (0, 1))
    g(W, b, xs)
    first = time.perf_counter() - start
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        g(W, b, xs)
        times.append(time.perf_counter() - t0)
    print(f"first call {first:.2f} s; backend {g.backend}; "
          f"median call {statistics.median(times) * 1e3:.3f} ms")
    if g.fallback_reason:
        print("reason:", g.fallback_reason)


if __name__ == "__main__":
    main()
