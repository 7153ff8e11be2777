"""examples/distributed_ensemble.py on a LocalCluster of 2 worker processes (issue 21).

The ensemble's gradient summed on the cluster (per-shard tasks, a tree reduction) is
the single-process one, bit for bit; it agrees with central differences of the model;
and a worker that dies while running a shard's task is replaced by Dask, which runs
the task again, with the same result.  Skipped when the ``distributed`` extra is absent.
"""
import os
import pathlib
import sys

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import s2sgrad  # noqa: E402

# the example is imported by its name, as a user's module is: pickle takes its functions
# by reference, and the workers (which start with this process's sys.path) import it
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
import distributed_ensemble as example  # noqa: E402

#: seconds a cluster's result may take: a task no worker can run fails the test, never hangs
WAIT = 120


@pytest.fixture(scope="module")
def problem():
    """(the value-and-gradient object, built here once, the shards, a kappa)."""
    _, shards = example.make_problem(members=16, shards=4)
    gradient = s2sgrad.value_and_grad(example.shard_misfit)
    kappa = np.linspace(0.4, 0.9, example.CELLS - 1)
    return gradient, shards, kappa


@pytest.fixture(scope="module")
def client():
    c = example.connect(workers=2)
    yield c
    c.close()
    c.cluster.close()


def scattered(client, data, broadcast=False):
    """``data`` scattered under keys of its own (``hash=False``): two tests scattering the
    same object got the same content-hashed key, and the first test's release of it raced
    the second's replication ("Key lost during replication", then "lost dependencies")."""
    return client.scatter(data, broadcast=broadcast, hash=False)


def test_the_cluster_gives_the_single_process_gradient(problem, client):
    gradient, shards, kappa = problem
    here = example.ensemble_gradient(gradient, kappa, shards)
    there = example.ensemble_gradient(scattered(client, gradient, True), kappa,
                                      scattered(client, shards), client, timeout=WAIT)
    assert len(client.scheduler_info()["workers"]) == 2
    assert there[0] == here[0] and np.array_equal(there[1], here[1])
    # and it is the gradient: central differences of the model along one direction
    direction = np.cos(np.arange(kappa.size))
    misfit = lambda k: sum(example.shard_misfit(k, *s) for s in shards)  # noqa: E731
    h = 1e-6
    fd = (misfit(kappa + h * direction) - misfit(kappa - h * direction)) / (2 * h)
    assert np.isclose(here[1] @ direction, fd, rtol=1e-7, atol=1e-9)


def test_a_fit_on_the_cluster_is_the_fit_in_one_process(problem, client):
    gradient, shards, _ = problem
    quiet = lambda _: None  # noqa: E731
    kappa, misfits = example.fit(scattered(client, gradient, True),
                                 scattered(client, shards), 3, client, log=quiet)
    local, local_misfits = example.fit(gradient, shards, 3, log=quiet)
    assert np.array_equal(kappa, local) and misfits == local_misfits
    assert misfits[-1] < misfits[0]


class DieOnce:
    """A shard task whose first run anywhere kills the worker process running it."""

    def __init__(self, marker):
        self.marker = marker

    def __call__(self, gradient, kappa, shard):
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)          # the worker dies mid-task, as a crash or an OOM kill
        return example.shard_gradient(gradient, kappa, shard)


def test_a_task_whose_worker_dies_is_run_again_with_the_same_result(problem, client,
                                                                    tmp_path):
    gradient, shards, kappa = problem
    marker = tmp_path / "died"
    here = example.ensemble_gradient(gradient, kappa, shards)
    there = example.ensemble_gradient(gradient, kappa, shards, client,
                                      task=DieOnce(str(marker)), timeout=WAIT)
    assert marker.exists()          # a worker did die
    assert there[0] == here[0] and np.array_equal(there[1], here[1])
