"""s2sgrad against its peers, where they are installed (run by hand).

    pip install -e '.[bench]'        # jax, autograd (PyTorch: pip install torch)
    python benchmarks/bench_peers.py

Two computations, timed in one run with threads pinned to 1 (medians):

- the scalar recurrence h = tanh(w*h + x[i]), n = 10,000, gradient w.r.t. w
  and x: s2sgrad, JAX (jit of grad of a ``lax.scan``, the way JAX users write
  loops; and a plain Python loop under grad, without jit), HIPS autograd
  (Python loop), PyTorch eager (Python loop);
- the MLP of bench_mlp.py: s2sgrad, JAX (jit + grad), autograd, PyTorch.

Ratios are against s2sgrad in the same run.  A peer that is not installed is
listed as such; nothing here is needed by the tests.
"""
import importlib.util
import sys

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

import s2sgrad
from bench_mlp import arguments, mlp_loss
from bench_workloads import recurrence
from harness import median_time, table


def have(name):
    return importlib.util.find_spec(name) is not None


def recurrence_peers(w, x):
    peers = {}
    if have("jax"):
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def scan_loss(w, x):
            def step(h, xi):
                h = jnp.tanh(w * h + xi)
                return h, None
            h, _ = jax.lax.scan(step, 0.0, x)
            return h

        g_jax = jax.jit(jax.value_and_grad(scan_loss, (0, 1)))
        x_jax = jnp.asarray(x)
        peers["JAX jit(grad(lax.scan))"] = lambda: jax.block_until_ready(g_jax(w, x_jax))

        def loop_loss(w, x):
            h = 0.0
            for i in range(x.shape[0]):
                h = jnp.tanh(w * h + x[i])
            return h
        xs = jnp.asarray(x[:200])
        g_loop = jax.value_and_grad(loop_loss, (0, 1))
        peers["JAX grad(Python loop), n=200 only"] = lambda: jax.block_until_ready(g_loop(w, xs))
    if have("autograd"):
        import autograd
        import autograd.numpy as anp

        def ag_loss(w, x):
            h = 0.0
            for i in range(x.shape[0]):
                h = anp.tanh(w * h + x[i])
            return h
        g_ag = autograd.value_and_grad(ag_loss, (0, 1))
        peers["autograd (Python loop)"] = lambda: g_ag(w, x)
    if have("torch"):
        import torch
        torch.set_num_threads(1)
        xt = torch.tensor(x)

        def torch_call():
            wt = torch.tensor(w, requires_grad=True)
            xr = xt.clone().requires_grad_(True)
            h = torch.tensor(0.0, dtype=torch.float64)
            for i in range(xr.shape[0]):
                h = torch.tanh(wt * h + xr[i])
            h.backward()
            return wt.grad, xr.grad
        peers["PyTorch eager (Python loop)"] = torch_call
    return peers


def mlp_peers(args):
    peers = {}
    W1, b1, W2, b2, W3, b3, x, onehot = args
    if have("jax"):
        import jax
        import jax.numpy as jnp

        def loss(W1, b1, W2, b2, W3, b3, x, onehot):
            h1 = jnp.maximum(x @ W1 + b1, 0.0)
            h2 = jnp.maximum(h1 @ W2 + b2, 0.0)
            z = h2 @ W3 + b3
            return -jnp.sum(onehot * jax.nn.log_softmax(z, axis=1)) / x.shape[0]
        g_jax = jax.jit(jax.value_and_grad(loss, (0, 1, 2, 3, 4, 5)))
        jargs = [jnp.asarray(a) for a in args]
        peers["JAX jit(grad)"] = lambda: jax.block_until_ready(g_jax(*jargs))
    if have("autograd"):
        import autograd
        import autograd.numpy as anp

        def ag_loss(W1, b1, W2, b2, W3, b3, x, onehot):
            h1 = anp.maximum(x @ W1 + b1, 0.0)
            h2 = anp.maximum(h1 @ W2 + b2, 0.0)
            z = h2 @ W3 + b3
            m = anp.max(z, axis=1, keepdims=True)
            logp = z - m - anp.log(anp.sum(anp.exp(z - m), axis=1, keepdims=True))
            return -anp.sum(onehot * logp) / x.shape[0]
        g_ag = autograd.value_and_grad(ag_loss, (0, 1, 2, 3, 4, 5))
        peers["autograd"] = lambda: g_ag(*args)
    if have("torch"):
        import torch
        targs = [torch.tensor(a) for a in args]

        def torch_call():
            ws = [t.clone().requires_grad_(True) for t in targs[:6]]
            h1 = torch.relu(targs[6] @ ws[0] + ws[1])
            h2 = torch.relu(h1 @ ws[2] + ws[3])
            z = h2 @ ws[4] + ws[5]
            loss = -(targs[7] * torch.log_softmax(z, dim=1)).sum() / z.shape[0]
            loss.backward()
            return [w.grad for w in ws]
        peers["PyTorch eager"] = torch_call
    return peers


def compare(title, ours, peers):
    t_ours = median_time(ours)
    rows = [["s2sgrad", f"{t_ours * 1e3:.3f}", "1.00x"]]
    for name, call in peers.items():
        t = median_time(call, repeat=5)
        rows.append([name, f"{t * 1e3:.3f}", f"{t / t_ours:.2f}x"])
    for name in ("jax", "autograd", "torch"):
        if not have(name):
            rows.append([f"{name} (not installed)", "-", "-"])
    table(rows, [title, "ms", "vs s2sgrad"])
    print()


def main():
    rng = np.random.default_rng(0)
    w, x = 0.7, rng.normal(size=10_000)
    g = s2sgrad.value_and_grad(recurrence, (0, 1))
    compare("recurrence n=10,000", lambda: g(w, x), recurrence_peers(w, x))
    args = arguments()
    g_mlp = s2sgrad.value_and_grad(mlp_loss, (0, 1, 2, 3, 4, 5))
    compare("MLP 784-512-512-10 batch 64", lambda: g_mlp(*args), mlp_peers(args))


if __name__ == "__main__":
    sys.exit(main())
