"""ht (GradBench evals/ht, ADBench's hand tracking): the Jacobian of the fitting errors
w.r.t. the 26 pose parameters, the "simple" variant (no ``us``) at hand1's size (the
544-vertex model, c = 100 correspondences: a 300 x 26 Jacobian).

Written from the eval's README and ADBench's reference objective (GradBench's
tools/pytorch/ht_objective.py): 22 bones posed by Euler angles, their absolute
transforms through the parents, linear blend skinning of the base positions, a global
angle-axis rotation, scale and translation, then ``points`` minus the posed vertices
they correspond to.  The data is synthetic, of the standard model's sizes (rigid bone
transforms, sparse skinning weights summing to 1).  The Jacobian is tall, so
``s2sgrad.jacobian`` picks forward mode; JAX gets ``jax.jit(jax.jacfwd)`` of the same
objective in its own spelling (``jax_objective``: the in-place write ``tr[:3, :3] = R``
as ``.at[].set``, the parents read as Python ints), as a JAX tool of this eval would
write it (GradBench has none).
"""
import numpy as np

SIZE = "simple, c=100, 544 vertices (300 x 26)"

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


def inputs():
    theta, rest = data()
    return (theta, *rest)


forward = ht_objective


def _s2sgrad():
    import s2sgrad
    return s2sgrad.jacobian(ht_objective)


def _jax():
    jax, objective = jax_objective()
    compiled = jax.jit(jax.jacfwd(objective))

    def jacobian(theta, parents, *rest):     # the parents are read as Python ints
        return jax.block_until_ready(compiled(theta, *rest))
    return jacobian


#: autograd cannot differentiate through the in-place write ``tr[:3, :3] = R``
SKIP = {"autograd": "autograd has no item assignment (tr[:3, :3] = R)"}
tools = {"s2sgrad": _s2sgrad, "jax": _jax, "autograd": None}
