"""What checking the values a gradient took from outside costs per call (issue 19, item 4).

    python benchmarks/bench_guards.py

A gradient's code is built for the globals, closure variables and attributes its
function read (numbers as literals, sub-cells inlined); every call checks that they are
unchanged (``s2sgrad/api/guards.py``).  Here a loop-free function reads N module-level
numbers (N = 0, 1, 4, 16, 64), and a Cell reads N attributes of itself; the table gives
the best per-call CPU time of ``value_and_grad`` on a 4-element array, of the guard check
alone, and the cost per captured value ((t(N) - t(0)) / N).  Run it on an older tree to
compare (the public API only is used; the check column is left empty there).
"""
import importlib.util
import os
import sys
import tempfile
import time

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

import s2sgrad
from harness import table
from s2sgrad import Tensor

CALLS, ROUNDS = 3000, 9
SIZES = (0, 1, 4, 16, 64)


def load(name, text):
    """Import ``text`` as module ``name`` from a file (s2sgrad reads the source)."""
    folder = tempfile.mkdtemp(prefix="s2sgrad_guards_")
    path = os.path.join(folder, f"{name}.py")
    with open(path, "w") as out:
        out.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def function_reading_globals(n):
    """A function ``f(x)`` that reads ``n`` module-level floats."""
    terms = " + ".join(f"K{k}" for k in range(n)) or "1.0"
    return load(f"globals_{n}", "import numpy as np\n" + "".join(
        f"K{k} = {k + 1}.0\n" for k in range(n)) + (
        f"\n\ndef f(x):\n    return np.sum(x * x * ({terms}))\n")).f


def cell_reading_attributes(n):
    """A Cell whose construct reads ``n`` float attributes of itself."""
    terms = " + ".join(f"self.a{k}" for k in range(n)) or "1.0"
    sets = "".join(f"        self.a{k} = {k + 1}.0\n" for k in range(n))
    module = load(f"cell_{n}", (
        "import numpy as np\nfrom s2sgrad import Parameter, Tensor, nn, ops\n\n\n"
        "class Scaled(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = Parameter(Tensor(np.ones(4)), name='w')\n" + sets +
        f"\n    def construct(self, x):\n        return ops.sum(self.w * x * ({terms}))\n"))
    return module.Scaled()


def per_call(call):
    best = float("inf")
    for _ in range(ROUNDS):
        t0 = time.process_time()
        for _ in range(CALLS):
            call()
        best = min(best, (time.process_time() - t0) / CALLS)
    return best


def check_time(g):
    """The guard check of ``g``'s current code alone (None on a tree without guards)."""
    try:
        from s2sgrad.api.guards import holds
    except ImportError:
        return None
    generated = g._generated
    holds(generated)
    return per_call(lambda: holds(generated)) if generated.guard_check else 0.0


def main():
    x = np.arange(1.0, 5.0)
    rows, base = [], {}
    for kind in ("globals", "Cell attributes"):
        for n in SIZES:
            if kind == "globals":
                g = s2sgrad.value_and_grad(function_reading_globals(n), 0)
                call = lambda g=g: g(x)                                  # noqa: E731
            else:
                net = cell_reading_attributes(n)
                g = s2sgrad.value_and_grad(net, None, net.trainable_params())
                tx = Tensor(x)
                call = lambda g=g, tx=tx: g(tx)                          # noqa: E731
            call()
            call()
            t = per_call(call)
            c = check_time(g)
            base.setdefault(kind, t)
            each = (t - base[kind]) / n if n else None
            rows.append([kind, n, f"{t * 1e6:.2f}", "-" if c is None else f"{c * 1e6:.3f}",
                         "-" if each is None else f"{each * 1e9:.0f}"])
    table(rows, ["reads", "N", "call (us)", "check (us)", "per value (ns)"])


if __name__ == "__main__":
    main()
