"""A numpy MLP (784-512-512-10, ReLU, softmax cross-entropy, batch 64) against a
hand-written numpy backward (run by hand).

    python benchmarks/bench_mlp.py                       # the backend s2sgrad picks
    S2SGRAD_BACKEND=python python benchmarks/bench_mlp.py

Times, in one run with threads pinned to 1: the forward alone (numpy), the
hand-written value-and-gradient (numpy, computing only the weights' adjoints),
and s2sgrad's generated value-and-gradient with respect to the six weights.
Issue 9's target: s2sgrad <= 1.0x the hand-written backward.
"""
import time

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

import s2sgrad
from harness import median_time, table


def mlp_loss(W1, b1, W2, b2, W3, b3, x, onehot):
    h1 = np.maximum(x @ W1 + b1, 0.0)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3 + b3
    m = np.max(z, axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.sum(onehot * logp) / x.shape[0]


def mlp_hand(W1, b1, W2, b2, W3, b3, x, onehot):
    a1 = x @ W1 + b1
    h1 = np.maximum(a1, 0.0)
    a2 = h1 @ W2 + b2
    h2 = np.maximum(a2, 0.0)
    z = h2 @ W3 + b3
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    s = np.sum(e, axis=1, keepdims=True)
    logp = z - m - np.log(s)
    n = x.shape[0]
    loss = -np.sum(onehot * logp) / n
    dz = (e / s - onehot) / n
    dW3 = h2.T @ dz
    db3 = dz.sum(axis=0)
    da2 = (dz @ W3.T) * (a2 > 0)
    dW2 = h1.T @ da2
    db2 = da2.sum(axis=0)
    da1 = (da2 @ W2.T) * (a1 > 0)
    dW1 = x.T @ da1
    db1 = da1.sum(axis=0)
    return loss, (dW1, db1, dW2, db2, dW3, db3)


def arguments(batch=64, seed=0):
    rng = np.random.default_rng(seed)
    sizes = [(784, 512), (512, 512), (512, 10)]
    weights = []
    for fan_in, fan_out in sizes:
        weights += [rng.normal(size=(fan_in, fan_out)) * np.sqrt(2.0 / fan_in),
                    np.zeros(fan_out)]
    x = rng.random((batch, 784))
    onehot = np.eye(10)[rng.integers(0, 10, size=batch)]
    return tuple(weights) + (x, onehot)


def main():
    args = arguments()
    generated = s2sgrad.value_and_grad(mlp_loss, (0, 1, 2, 3, 4, 5))
    t0 = time.perf_counter()
    value, grads = generated(*args)
    first = time.perf_counter() - t0
    hand_value, hand_grads = mlp_hand(*args)
    np.testing.assert_allclose(value, hand_value, rtol=1e-10)
    for g, h in zip(grads, hand_grads):
        np.testing.assert_allclose(g, h, rtol=1e-8, atol=1e-12)
    t_fwd = median_time(mlp_loss, *args)
    t_hand = median_time(mlp_hand, *args)
    t_gen = median_time(generated, *args)
    print(f"s2sgrad backend: {generated.backend}"
          + (f" ({generated.fallback_reason})" if generated.fallback_reason else ""))
    table([["forward (numpy)", f"{t_fwd * 1e3:.2f}", f"{t_fwd / t_hand:.2f}x"],
           ["hand-written backward (numpy)", f"{t_hand * 1e3:.2f}", "1.00x"],
           [f"s2sgrad value_and_grad ({generated.backend})", f"{t_gen * 1e3:.2f}",
            f"{t_gen / t_hand:.2f}x"],
           ["s2sgrad first call (this process)", f"{first * 1e3:.0f}", "-"]],
          ["MLP 784-512-512-10, batch 64", "ms", "vs hand"])


if __name__ == "__main__":
    main()
