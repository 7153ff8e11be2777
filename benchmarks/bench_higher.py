"""Higher order and the split reverse mode against the gradient (run by hand).

    python benchmarks/bench_higher.py              # the default workloads
    python benchmarks/bench_higher.py rnn rk4      # those whose name contains a word

For loop workloads of ``bench_workloads.py``, in one run, with threads pinned to 1 and
medians of repeated calls: s2sgrad's value-and-gradient w.r.t. every argument; the
Hessian-vector product ``s2sgrad.hvp`` (forward mode over the generated gradient);
``s2sgrad.vjp`` (the forward sweep, then ``vjp_fn`` once) and ``vjp_fn`` alone (the
adjoint sweep on stored values).  Before timing, the Hessian-vector product is checked
against central differences of s2sgrad's gradient and the vjp against the gradient.

Issue 11's target: a Hessian-vector product <= 4x the gradient.
"""
import sys

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

import s2sgrad
from bench_workloads import workloads
from harness import median_time, table

DEFAULT = ("recurrence", "heat_copy_top", "rnn", "rk4", "huber_path", "pairwise")


def _check_hvp(fn, args, v, hv, eps=1e-6):
    g = s2sgrad.grad(fn, tuple(range(len(args))))
    up = g(*[a + eps * t for a, t in zip(args, v)])
    down = g(*[a - eps * t for a, t in zip(args, v)])
    up, down = (up, down) if len(args) > 1 else ((up,), (down,))
    for k, (h, u, d) in enumerate(zip(hv, up, down)):
        fd = (np.asarray(u) - np.asarray(d)) / (2 * eps)
        scale = 1.0 + np.max(np.abs(fd))
        assert np.max(np.abs(np.asarray(h) - fd)) <= 1e-5 * scale, (
            f"{fn.__name__}: hvp of argument {k} disagrees with differences of the gradient")


def main(words):
    rows = []
    for name, fn, _, args, _ in workloads():
        chosen = words or DEFAULT
        if not any(w in name or w == fn.__name__ for w in chosen):
            continue
        args = tuple(args)
        positions = tuple(range(len(args)))
        rng = np.random.default_rng(3)
        v = tuple(rng.normal(size=np.shape(a)) if np.ndim(a) else 0.3 for a in args)
        value_and_grad = s2sgrad.value_and_grad(fn, positions)
        value, grads = value_and_grad(*args)
        hv = s2sgrad.hvp(fn, args, v)
        _check_hvp(fn, args, v, hv)
        out, vjp_fn = s2sgrad.vjp(fn, *args)
        for g, h in zip(vjp_fn(1.0), grads if len(args) > 1 else (grads,)):
            np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)

        def vjp_whole():
            return s2sgrad.vjp(fn, *args)[1](1.0)

        t_grad = median_time(value_and_grad, *args)
        t_hvp = median_time(s2sgrad.hvp, fn, args, v)
        t_vjp = median_time(vjp_whole)
        t_back = median_time(vjp_fn, 1.0)
        backend = s2sgrad.api.higher.hvp_forward(fn, len(args), tuple(range(len(args)))).backend
        rows.append([name, value_and_grad.backend, backend, f"{t_grad * 1e3:.3f}",
                     f"{t_hvp * 1e3:.3f}", f"{t_hvp / t_grad:.2f}x",
                     f"{t_vjp * 1e3:.3f}", f"{t_vjp / t_grad:.2f}x", f"{t_back * 1e3:.3f}"])
        print(f"done: {name}", file=sys.stderr)
    table(rows, ["workload", "grad backend", "hvp backend", "grad ms", "hvp ms",
                 "hvp / grad", "vjp + vjp_fn ms", "vjp / grad", "vjp_fn alone ms"])


if __name__ == "__main__":
    main(sys.argv[1:])
