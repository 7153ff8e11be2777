"""Time each statement of the MLP's generated gradient and of the hand-written one (run
by hand): where the generated code spends more than the hand-written code.

    python benchmarks/mlp_statements.py                  # 400 calls each
    python benchmarks/mlp_statements.py 800 old.py       # also an earlier generated source

Each function's body is instrumented (a clock read and the process's minor page faults
around every statement) and the functions are called interleaved in a shuffled order,
so that a loaded machine slows all of them alike; the medians per statement are printed
with the page faults (a fresh large array costs one per 4 KiB page on every call).
"""
import ast
import inspect
import random
import resource
import statistics
import sys
import textwrap
import time

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

import s2sgrad
from s2sgrad import runtime as rt
from bench_mlp import arguments, mlp_hand, mlp_loss


def instrumented(source, label):
    """The first function of ``source`` with each top-level statement timed: it takes an
    extra argument, a list to which it adds (seconds, page faults) per statement."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    texts, body = [], []
    for k, statement in enumerate(fn.body):
        texts.append(ast.unparse(statement).split("\n")[0][:78])
        body += ast.parse("_f0 = _faults(_SELF).ru_minflt\n_t0 = _clock()").body
        body.append(statement)
        body += ast.parse(f"_out[{k}][0] += _clock() - _t0\n"
                          f"_out[{k}][1] += _faults(_SELF).ru_minflt - _f0").body
    fn.body = body
    fn.args.args.append(ast.arg("_out"))
    ast.fix_missing_locations(tree)
    names = {"np": np, "rt": rt, "_clock": time.perf_counter, "_faults": resource.getrusage,
             "_SELF": resource.RUSAGE_SELF}
    exec(compile(tree, label, "exec"), names)   # noqa: S102 - our own generated source
    return names[fn.name], texts


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    args = arguments()
    gradient = s2sgrad.value_and_grad(mlp_loss, (0, 1, 2, 3, 4, 5))
    gradient(*args)
    sources = [("generated", gradient.source)] + [(path, open(path).read())
                                                  for path in sys.argv[2:]]
    sources.append(("hand", textwrap.dedent(inspect.getsource(mlp_hand))))
    runs = []
    for label, source in sources:
        fn, texts = instrumented(source, label)
        runs.append((label, fn, texts, [[] for _ in texts]))
    for _ in range(calls):
        random.shuffle(runs)
        for _, fn, texts, samples in runs:
            out = [[0.0, 0] for _ in texts]
            fn(*args, out)
            for sample, measured in zip(samples, out):
                sample.append(measured)
    for label, _, texts, samples in sorted(runs, key=lambda r: r[0]):
        times = [statistics.median(t for t, _ in s) for s in samples]
        faults = [statistics.median(f for _, f in s) for s in samples]
        print(f"== {label}: {sum(times) * 1e3:.3f} ms (sum of medians), "
              f"{sum(faults):.0f} page faults")
        for text, t, f in zip(texts, times, faults):
            print(f"{t * 1e6:9.1f} us {f:5.0f}  {text}")


if __name__ == "__main__":
    main()
