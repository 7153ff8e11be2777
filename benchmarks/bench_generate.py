"""Generation time: how long s2sgrad takes to write a derivative's source (run by hand).

    python benchmarks/bench_generate.py

Times the compiler alone (no Numba, no cache): the generic build of each transform
(``pipeline.build`` for grad, ``pipeline_split`` for vjp/jacrev, ``pipeline_forward``
for jvp, ``pipeline_higher`` for hvp) of a few programs of the benchmarks: a loop-free
MLP, a scalar recurrence, a 1-D stencil with nested loops, an RNN, RK4 and a Newton
iteration.  Medians of repeated builds, in milliseconds; a change to the compiler that
should not change what it does (a refactor) should leave these within noise.
"""
import harness  # noqa: F401
from harness import median_time, table

import bench_mlp
import bench_workloads as w
from s2sgrad.compiler.pipeline import build
from s2sgrad.compiler.pipeline_forward import build_jvp
from s2sgrad.compiler.pipeline_higher import build_hvp
from s2sgrad.compiler.pipeline_split import build_split

PROGRAMS = {
    "MLP (loop-free)": (bench_mlp.mlp_loss, (0, 1, 2, 3, 4, 5)),
    "recurrence": (w.recurrence, (0, 1)),
    "heat 1-D (nested loops)": (w.heat_copy_top, (0, 1)),
    "RNN": (w.rnn, (0, 1)),
    "RK4": (w.rk4, (0, 1, 2)),
    "Newton": (w.newton_roots, (0,)),
}
TRANSFORMS = {
    "grad": lambda fn, pos: build(fn, pos, [], False),
    "vjp": lambda fn, pos: build_split(fn, pos, [], False),
    "jvp": lambda fn, pos: build_jvp(fn, pos),
    "hvp": lambda fn, pos: build_hvp(fn, pos),
}


def main():
    rows = []
    for name, (fn, positions) in PROGRAMS.items():
        row = [name]
        for transform in TRANSFORMS.values():
            try:
                row.append(f"{median_time(transform, fn, positions, repeat=7) * 1e3:.1f}")
            except Exception as error:  # noqa: BLE001 - a transform a program does not take
                row.append(f"- ({type(error).__name__})")
        rows.append(row)
    table(rows, ["program (ms per build)", *TRANSFORMS])


if __name__ == "__main__":
    main()
