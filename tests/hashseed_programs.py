"""Programs whose generated gradient source must not depend on the process: run as a
script (``python hashseed_programs.py``) it builds each gradient and prints one JSON
object, program name -> generated source.  tests/test_determinism.py runs it under
several PYTHONHASHSEED values and requires byte-identical output."""
import json
import sys

import numpy as np

import s2sgrad
from s2sgrad import Parameter, Tensor, nn


def loops_and_branches(x, w, alpha, beta, gamma):
    h = np.tanh(x @ w)
    acc, other, third = 0.0, 1.0, alpha
    buf = np.zeros(4)
    for i in range(3):
        if np.sum(h) > 0.1 * i:
            acc = acc + np.sum(h * alpha) + other * beta
            other = other * gamma + third
        else:
            acc = acc - np.sin(other) * gamma
            third = third + acc * beta
        buf[i] = acc * other
        h = np.cos(h) * beta + third
    n = 0
    while acc * acc < 50.0 and n < 4:
        acc = acc * 1.5 + other + 0.1
        n = n + 1
    return np.sum(buf) + acc * other * third + np.sum(h)


def lists_and_tuples(p, q):
    a, b = p
    items = []
    for j in range(q.shape[0]):
        items.append(np.exp(q[j] * a) + b)
    pair = (a * 2.0, b * 3.0)
    for k in range(2):
        pair = (np.sin(pair[0]) + pair[1], pair[1] * 0.9 + a)
    return np.sum(np.stack(items)) + pair[0] * pair[1]


@s2sgrad.custom_vjp
def softclip(v):
    return np.tanh(v) * 2.0


@softclip.defvjp
def _softclip_backward(v, out, g):
    return (g * (2.0 - out * out / 2.0),)


def helper(value, stop):
    total = 0.0
    for k in range(4):
        if value * k > 3.0:
            break
        total = total + np.sin(value * stop)
    return total


def nested_and_custom(u, v, c):
    grid = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            grid[i, j] = u[i] * v[j] + c
        grid[i] = np.tanh(grid[i])
    ys = [np.exp(u[k] * c) for k in range(3)]
    t = np.where(u > 0.0, u * c, v * 0.5)
    return (np.sum(grid) + np.sum(softclip(t)) + helper(c, u[0]) + ys[0] * ys[2]
            + np.sum(np.maximum(u, v)))


def branch_return(x, a):
    """Found by generating random programs under several hash seeds: the adjoints zeroed
    before a branch came out in set order."""
    for i in range(4):
        if x[i] > -0.4:
            break
        a = a + x[i] * a
    if np.sum(x) > 0.013:
        return np.sum(x * a)
    pair = (x * a, a + 1.0)
    for i in range(2):
        pair = (np.sin(pair[0]) + pair[1], pair[1] * 0.9)
    p, q = pair
    return np.sum(p) + a + q


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.first = nn.Dense(4, 3)
        self.scale = Parameter(Tensor(rng.uniform(0.5, 1.5, 3)), name="scale")
        self.shift = Parameter(Tensor(rng.uniform(-0.5, 0.5, 3)), name="shift")

    def construct(self, x):
        y = self.first(x) * self.scale + self.shift
        for i in range(2):
            y = np.tanh(y) * self.scale
        return np.sum(y * y)


def sources():
    rng = np.random.default_rng(1)
    out = {}
    x, w = rng.normal(size=(2, 4)), rng.normal(size=(4, 4))
    g = s2sgrad.grad(loops_and_branches, (0, 1, 2, 3, 4))
    g(x, w, 0.3, 0.7, 1.1)
    out["loops_and_branches"] = g.source
    g = s2sgrad.grad(lists_and_tuples, (0, 1))
    g((0.5, 1.5), rng.normal(size=3))
    out["lists_and_tuples"] = g.source
    g = s2sgrad.grad(nested_and_custom, (0, 1, 2))
    g(rng.normal(size=3), rng.normal(size=3), 0.4)
    out["nested_and_custom"] = g.source
    g = s2sgrad.grad(branch_return, (0, 1))
    g(np.linspace(-0.5, 0.7, 4), 0.3)
    out["branch_return"] = g.source
    net = Block()
    g = s2sgrad.grad(net, 0, net.trainable_params())
    g(Tensor(rng.normal(size=(2, 4))))
    out["cell"] = g.source
    return out


if __name__ == "__main__":
    json.dump(sources(), sys.stdout, sort_keys=True)
