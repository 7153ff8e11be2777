"""rt.einsum (two-operand contractions as one BLAS matmul) against np.einsum (run by hand).

    python benchmarks/bench_einsum.py

For contractions of growing size, the time of ``np.einsum`` and of ``rt.einsum`` with
the matmul path forced (``MATMUL_WORK = 0``): where the two cross is where
``runtime/einsum.py``'s ``MATMUL_WORK`` sits.  Threads pinned to 1, medians.
"""
import importlib

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

from harness import median_time, table

module = importlib.import_module("s2sgrad.runtime.einsum")

CASES = [("ij,jk->ik", lambda n: ((n, n), (n, n))),
         ("ijk,mik->mij", lambda n: ((4, n, n), (n, 4, n))),
         ("mij,mik->ijk", lambda n: ((n, 4, n), (n, 4, n))),
         ("i,i->", lambda n: ((n * n,), (n * n,)))]


def main():
    rng = np.random.default_rng(0)
    rows = []
    for spec, shapes in CASES:
        for n in (2, 4, 8, 16, 32, 64):
            a, b = (rng.random(s) for s in shapes(n))
            saved, module.MATMUL_WORK = module.MATMUL_WORK, 0
            fast = median_time(module.einsum, spec, a, b)
            module.MATMUL_WORK = saved
            plain = median_time(np.einsum, spec, a, b)
            rows.append([spec, n, f"{plain * 1e6:.1f}", f"{fast * 1e6:.1f}",
                         f"{plain / fast:.2f}x"])
    table(rows, ["spec", "n", "np.einsum us", "matmul us", "speed-up"])


if __name__ == "__main__":
    main()
