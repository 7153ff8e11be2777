"""What a Dask task adds to a shard's gradient (issue 21): examples/distributed_ensemble.py.

    python benchmarks/bench_dask.py [--workers 2] [--tasks 64] [--scheduler tcp://...]

The gradient object and the shards are scattered to the workers once; then rounds of
``--tasks`` shard-gradient tasks are submitted and gathered.  The table gives, per task,
the shard's gradient run here (the work), the wall time per task on the cluster (with
``--workers`` workers), and Dask's overhead per task: the cluster's wall time per task
times the number of workers, less the work (scheduling, transfer of the result, the
event loops), the median of the rounds.  The first task on each worker unpickles the
gradient and loads its code (Numba's cache): that is the "first round" line.
"""
import argparse
import pathlib
import statistics
import sys
import time

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

from harness import median_time, table

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
import distributed_ensemble as example  # noqa: E402

import s2sgrad  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scheduler")
    args = parser.parse_args()
    _, shards = example.make_problem(members=args.tasks, shards=args.tasks)
    gradient = s2sgrad.value_and_grad(example.shard_misfit)
    kappa = np.full(example.CELLS - 1, 0.5)
    work = median_time(gradient, kappa, *shards[0])
    client = example.connect(args.scheduler, args.workers)
    try:
        workers = len(client.scheduler_info()["workers"])
        remote_gradient = client.scatter(gradient, broadcast=True)
        remote_shards = client.scatter(shards)
        walls = []
        for _ in range(args.rounds + 1):
            start = time.perf_counter()
            futures = [client.submit(example.shard_gradient, remote_gradient, kappa, s,
                                     pure=False) for s in remote_shards]
            client.gather(futures)
            walls.append((time.perf_counter() - start) / len(futures))
    finally:
        client.close()
    steady = statistics.median(walls[1:])
    rows = [("shard gradient here (work)", f"{work * 1e3:.3f} ms"),
            (f"wall per task, {workers} workers, first round", f"{walls[0] * 1e3:.3f} ms"),
            (f"wall per task, {workers} workers, later rounds", f"{steady * 1e3:.3f} ms"),
            ("Dask overhead per task (wall x workers - work)",
             f"{(steady * workers - work) * 1e3:.3f} ms")]
    table([list(r) for r in rows], ["", "time"])


if __name__ == "__main__":
    main()
