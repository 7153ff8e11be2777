"""An inverse problem over an ensemble, with its gradient computed on a Dask cluster.

A rod of 32 cells conducts heat with an unknown conductivity per face (``kappa``, 31
values).  An ensemble of 64 experiments starts from different temperatures; each is
observed after 40 explicit time steps.  ``kappa`` is fitted to all 64 observations by
gradient descent on the summed misfit.  The ensemble is cut into shards; each shard's
gradient (``s2sgrad.grad`` of ``shard_misfit``) runs as a task on a Dask worker, and
the shards' gradients are summed by a tree reduction (pairs of pairs, as tasks too),
so the sum is the same, bit for bit, whichever worker ran what.

    pip install "s2sgrad[distributed]"
    python examples/distributed_ensemble.py                      # a LocalCluster here
    python examples/distributed_ensemble.py --scheduler tcp://host:8786   # a cluster

What travels to a worker is the pickled gradient object (``shard_misfit`` by
reference, or by value when it lives in ``__main__`` as here, its options and the
generated code: a worker never runs the compiler), once per worker
(``client.scatter(..., broadcast=True)``), and per task a shard's arrays.  Each worker
writes the code to its own cache folder ($S2SGRAD_CACHE_DIR, else ~/.cache/s2sgrad) and
compiles it there, or loads Numba's cache of it from that folder.

``--check`` also runs the same reduction in this process and says whether the results
are identical.
"""
import argparse
import time

import numpy as np

import s2sgrad

STEPS = 40          # explicit time steps per experiment
CELLS = 32
RATE = 0.2          # dt / dx**2: stable for kappa < 2.5


def shard_misfit(kappa, u0, data):
    """Half the squared misfit of the experiments of one shard (rows of ``u0``, ``data``)
    after STEPS steps of the heat equation with face conductivities ``kappa``."""
    u = u0
    for _ in range(STEPS):
        flux = kappa * (u[:, 1:] - u[:, :-1])      # heat through each face
        du = np.zeros_like(u)
        du[:, :-1] = du[:, :-1] + flux
        du[:, 1:] = du[:, 1:] - flux
        u = u + RATE * du
    return 0.5 * np.sum((u - data) ** 2)


def simulate(kappa, u0):
    """The final temperatures of the experiments ``u0`` (the model without its misfit)."""
    u = u0
    for _ in range(STEPS):
        flux = kappa * (u[:, 1:] - u[:, :-1])
        du = np.zeros_like(u)
        du[:, :-1] += flux
        du[:, 1:] -= flux
        u = u + RATE * du
    return u


def make_problem(members=64, shards=8, seed=0):
    """(true kappa, shards: a list of (u0, data) pairs of ``members // shards`` rows)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, CELLS - 1)
    kappa_true = 0.6 + 0.4 * np.sin(3.0 * x) ** 2
    u0 = rng.normal(size=(members, CELLS))
    data = simulate(kappa_true, u0) + 1e-3 * rng.normal(size=(members, CELLS))
    rows = np.array_split(np.arange(members), shards)
    return kappa_true, [(u0[r].copy(), data[r].copy()) for r in rows]


def shard_gradient(gradient, kappa, shard):
    """The value and gradient of one shard's misfit (a task on a worker)."""
    return gradient(kappa, *shard)


def add(a, b):
    """The sum of two (value, gradient) pairs."""
    return a[0] + b[0], a[1] + b[1]


def tree_sum(items, combine):
    """Pairs, then pairs of pairs: ``combine`` applied in a fixed tree over ``items``."""
    while len(items) > 1:
        paired = [combine(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        items = paired + ([items[-1]] if len(items) % 2 else [])
    return items[0]


def ensemble_gradient(gradient, kappa, shards, client=None, task=shard_gradient,
                      timeout=None):
    """(misfit, gradient) summed over ``shards``: each shard's ``task`` on a worker of
    ``client`` and a tree reduction there; without a client, the same in this process.
    ``shards`` may be futures (scattered once) and ``gradient`` too; ``timeout``: seconds
    to wait for the cluster's result (None: as long as it takes)."""
    if client is None:
        return tree_sum([task(gradient, kappa, s) for s in shards], add)
    parts = [client.submit(task, gradient, kappa, s, pure=False) for s in shards]
    total = tree_sum(parts, lambda a, b: client.submit(add, a, b, pure=False))
    return total.result(timeout=timeout)


def fit(gradient, shards, iterations, client=None, step=0.2, log=print):
    """Gradient descent on kappa from a flat start; gives (kappa, misfits per iteration)."""
    kappa = np.full(CELLS - 1, 0.5)
    misfits = []
    for it in range(iterations):
        misfit, g = ensemble_gradient(gradient, kappa, shards, client)
        misfits.append(float(misfit))
        log(f"iteration {it:3d}  misfit {misfit:.6e}")
        kappa = kappa - step * g
    return kappa, misfits


def connect(scheduler=None, workers=2):
    """A Dask client: of the cluster at ``scheduler``, or of a LocalCluster of
    ``workers`` processes (one thread each) on this machine."""
    from dask.distributed import Client, LocalCluster
    if scheduler:
        return Client(scheduler)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scheduler", help="a Dask scheduler's address (tcp://host:port); "
                        "default: a LocalCluster on this machine")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster processes")
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--check", action="store_true",
                        help="also run in this process and compare")
    args = parser.parse_args(argv)
    kappa_true, shards = make_problem(args.members, args.shards)
    gradient = s2sgrad.value_and_grad(shard_misfit)
    gradient(np.full(CELLS - 1, 0.5), *shards[0])     # built (and compiled) here, once
    client = connect(args.scheduler, args.workers)
    try:
        # (keys of their own: a content-hashed key shared with an earlier scatter of the
        # same object can be released by it while being replicated)
        remote_gradient = client.scatter(gradient, broadcast=True, hash=False)
        remote_shards = client.scatter(shards, broadcast=False, hash=False)
        start = time.perf_counter()
        kappa, misfits = fit(remote_gradient, remote_shards, args.iterations, client)
        took = time.perf_counter() - start
    finally:
        client.close()
    print(f"{args.iterations} iterations over {len(shards)} shards in {took:.2f} s; "
          f"kappa error {np.max(np.abs(kappa - kappa_true)):.3e}")
    if args.check:
        local, local_misfits = fit(gradient, shards, args.iterations, log=lambda _: None)
        print("identical to one process:",
              np.array_equal(local, kappa) and local_misfits == misfits)


if __name__ == "__main__":
    main()
