"""GradBench's ht (hand tracking) Jacobian in plain numpy, against JAX (run by hand).

    python benchmarks/bench_jacobian.py [--points 100]

The objective follows the eval's README and ADBench's reference (``ht_objective``:
a 22-bone hand posed by 26 parameters, the error of ``points`` against their skinned
vertices; the "simple" case, no ``us``), on synthetic data of the standard model's
sizes (544 vertices, 100 correspondences: a 300 x 26 Jacobian).  Times, single
threaded: s2sgrad's ``jacfwd``, ``jacrev`` and ``jacobian`` (which picks forward mode
for this tall Jacobian), and ``jax.jit`` of ``jax.jacfwd`` / ``jax.jacrev`` of the same
code written with ``jax.numpy`` (float64); first calls (generation and Numba compile,
or JAX's trace and compile) and medians of repeated calls.
"""
import argparse
import os
import time

import harness  # noqa: F401  (one thread, before numpy)
from harness import median_time, table

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import s2sgrad  # noqa: E402

PARENTS = np.array([-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0, 17, 18, 19, 0])


def euler_to_rotation(tx, ty, tz):
    Rx = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(tx), -np.sin(tx)], [0.0, np.sin(tx), np.cos(tx)]])
    Ry = np.array([[np.cos(ty), 0.0, -np.sin(ty)], [0.0, 1.0, 0.0], [np.sin(ty), 0.0, np.cos(ty)]])
    Rz = np.array([[np.cos(tz), -np.sin(tz), 0.0], [np.sin(tz), np.cos(tz), 0.0], [0.0, 0.0, 1.0]])
    return Rz @ Ry @ Rx


def angle_axis_to_rotation(aa):
    n = np.sqrt(np.sum(aa * aa))
    x = aa[0] / n
    y = aa[1] / n
    z = aa[2] / n
    s = np.sin(n)
    c = np.cos(n)
    return np.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                     [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                     [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])


def pose_params(theta):
    """The 26 parameters as one row of three angles per bone (after global rotation,
    scale and translation rows): ADBench's to_pose_params."""
    # rows: global rotation, scale, translation, then one row per bone (x, y, z angles)
    rows = [theta[0:3], np.ones(3), theta[3:6], np.zeros(3), np.zeros(3)]
    k = 6
    for finger in range(5):
        rows.append(np.array([theta[k], theta[k + 1], 0.0]))
        rows.append(np.array([theta[k + 2], 0.0, 0.0]))
        rows.append(np.array([theta[k + 3], 0.0, 0.0]))
        rows.append(np.zeros(3))
        k += 4
    return np.stack(rows)


def ht_objective(theta, parents, base_relatives, inverse_base_absolutes, base_positions,
                 weights, points, correspondences):
    pose = pose_params(theta)
    absolutes = []
    for i in range(base_relatives.shape[0]):
        R = euler_to_rotation(pose[3 + i, 0], pose[3 + i, 2], pose[3 + i, 1])
        tr = np.eye(4)
        tr[:3, :3] = R
        relative = base_relatives[i] @ tr
        if parents[i] == -1:
            absolutes.append(relative)
        else:
            absolutes.append(absolutes[parents[i]] @ relative)
    positions = np.zeros((base_positions.shape[0], 3))
    for i in range(base_relatives.shape[0]):
        transform = absolutes[i] @ inverse_base_absolutes[i]
        moved = base_positions @ transform.T
        positions = positions + weights[:, i:i + 1] * moved[:, :3]
    R = angle_axis_to_rotation(pose[0]) * pose[1]
    posed = positions @ R.T + pose[2]
    return (points - posed[correspondences]).ravel()


def data(n_points=100, n_vertices=544, seed=0):
    """(theta, the other arguments of ``ht_objective``): a random hand of the standard
    model's sizes, rigid bone transforms, sparse skinning weights summing to 1."""
    rng = np.random.default_rng(seed)
    nb = PARENTS.shape[0]

    def rigid():
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        m = np.eye(4)
        m[:3, :3] = q
        m[:3, 3] = rng.normal(size=3) * 0.1
        return m
    base_relatives = np.stack([rigid() for _ in range(nb)])
    inverse_base_absolutes = np.stack([rigid() for _ in range(nb)])
    base_positions = np.ones((n_vertices, 4))
    base_positions[:, :3] = rng.normal(size=(n_vertices, 3))
    weights = rng.random((n_vertices, nb)) * (rng.random((n_vertices, nb)) < 0.15)
    weights[:, 0] += 0.1
    weights /= weights.sum(axis=1, keepdims=True)
    points = rng.normal(size=(n_points, 3))
    correspondences = rng.integers(0, n_vertices, size=n_points)
    theta = rng.normal(size=26) * 0.3
    return theta, (PARENTS, base_relatives, inverse_base_absolutes, base_positions, weights,
                   points, correspondences)


def jax_objective():
    """The same objective in ``jax.numpy`` (item assignment as ``.at[].set``), or None when
    JAX is not installed (``pip install -e '.[bench]'``)."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def euler(tx, ty, tz):
        c, s = jnp.cos, jnp.sin
        rx = jnp.array([[1.0, 0.0, 0.0], [0.0, c(tx), -s(tx)], [0.0, s(tx), c(tx)]])
        ry = jnp.array([[c(ty), 0.0, -s(ty)], [0.0, 1.0, 0.0], [s(ty), 0.0, c(ty)]])
        rz = jnp.array([[c(tz), -s(tz), 0.0], [s(tz), c(tz), 0.0], [0.0, 0.0, 1.0]])
        return rz @ ry @ rx

    def angle_axis(aa):
        n = jnp.sqrt(jnp.sum(aa * aa))
        x, y, z = aa[0] / n, aa[1] / n, aa[2] / n
        s, c = jnp.sin(n), jnp.cos(n)
        return jnp.array([
            [x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
            [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
            [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])

    def pose_rows(theta):
        rows = [theta[0:3], jnp.ones(3), theta[3:6], jnp.zeros(3), jnp.zeros(3)]
        for k in range(6, 26, 4):
            rows += [jnp.array([theta[k], theta[k + 1], 0.0]),
                     jnp.array([theta[k + 2], 0.0, 0.0]),
                     jnp.array([theta[k + 3], 0.0, 0.0]), jnp.zeros(3)]
        return jnp.stack(rows)

    def objective(theta, base_relatives, inverse_base_absolutes, base_positions, weights,
                  points, correspondences):
        pose = pose_rows(theta)
        absolutes = []
        for i in range(base_relatives.shape[0]):
            tr = jnp.eye(4).at[:3, :3].set(euler(pose[3 + i, 0], pose[3 + i, 2],
                                                 pose[3 + i, 1]))
            relative = base_relatives[i] @ tr
            parent = int(PARENTS[i])
            absolutes.append(relative if parent == -1 else absolutes[parent] @ relative)
        positions = jnp.zeros((base_positions.shape[0], 3))
        for i in range(base_relatives.shape[0]):
            moved = base_positions @ (absolutes[i] @ inverse_base_absolutes[i]).T
            positions = positions + weights[:, i:i + 1] * moved[:, :3]
        posed = positions @ (angle_axis(pose[0]) * pose[1]).T + pose[2]
        return (points - posed[correspondences]).ravel()
    return jax, objective


def first_and_median(fn, *args):
    start = time.perf_counter()
    result = np.asarray(fn(*args))
    first = time.perf_counter() - start
    return result, first, median_time(fn, *args, repeat=7)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    theta, rest = data(n_points=parser.parse_args().points)
    rows, reference = [], None
    for name in ("jacfwd", "jacrev", "jacobian"):
        jac = getattr(s2sgrad, name)(ht_objective)
        result, first, median = first_and_median(jac, theta, *rest)
        if reference is None:
            reference = result
        assert np.allclose(result, reference, rtol=1e-10, atol=1e-12), name
        rows.append([f"s2sgrad {name}", jac.backend, f"{first:.2f}", f"{median * 1e3:.2f}"])
    peer = jax_objective()
    if peer is not None:
        jax, objective = peer
        for name in ("jacfwd", "jacrev"):
            jac = jax.jit(getattr(jax, name)(objective))
            args = (theta, *rest[1:])
            result, first, median = first_and_median(
                lambda *a: jac(*a).block_until_ready(), *args)
            assert np.allclose(result, reference, rtol=1e-10, atol=1e-12), name
            rows.append([f"jax.jit({name})", "xla", f"{first:.2f}", f"{median * 1e3:.2f}"])
    out = reference.shape
    table(rows, [f"ht Jacobian {out[0]} x {out[1]}", "backend", "first call s",
                 "median ms"])


if __name__ == "__main__":
    main()
