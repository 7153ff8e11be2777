"""Held-out spellings of the loop, Jacobian and nested evals (ht, ode, lstm, particle,
saddle): ``SPELLINGS`` and ``FORWARDS`` as in heldout_simple.py.

ht: jacfwd, jacrev and a Jacobian by vmap of jvp over the identity's rows, and the
objective with ``np.dot`` and in-place ``+=``; ode: in-place ``y +=``, the right-hand
side by slice assignment or ``np.hstack``, ``2 / s``; lstm: ADBench's own structure
(``lstm_model``/``lstm_predict`` helpers, rows assigned as a tuple), the functional
spelling (lists of rows); particle and saddle: the inner gradients spelled with
lambdas, ``functools.partial`` and closures, with and without ``s2sgrad.jit``.
"""
import functools

import numpy as np
from scipy.special import expit

import s2sgrad
from s2sgrad import nn, Parameter, Tensor
import ht
import lstm
import ode
import particle
import saddle

# --------------------------------------------------------------------------- ht


def ht_objective_dot(theta, parents, base_relatives, inverse_base_absolutes,
                     base_positions, weights, points, correspondences):
    pose = ht.pose_params(theta)
    absolutes = []
    for i in range(len(parents)):
        tr = np.eye(4)
        tr[:3, :3] = ht.euler_to_rotation(pose[i + 3, 0], pose[i + 3, 2], pose[i + 3, 1])
        if parents[i] == -1:
            absolutes.append(np.dot(base_relatives[i], tr))
        else:
            absolutes.append(np.dot(absolutes[parents[i]], np.dot(base_relatives[i], tr)))
    positions = np.zeros((base_positions.shape[0], 3))
    for i in range(len(parents)):
        moved = np.dot(base_positions, np.dot(absolutes[i], inverse_base_absolutes[i]).T)
        positions += weights[:, i:i + 1] * moved[:, :3]
    R = ht.angle_axis_to_rotation(pose[0]) * pose[1]
    posed = np.dot(positions, R.T) + pose[2]
    return (points - posed[correspondences]).ravel()


def _ht_by_vmap():
    def jacobian(theta, *rest):
        column = s2sgrad.vmap(lambda v: s2sgrad.jvp(lambda t: ht.ht_objective(t, *rest),
                                                    (theta,), (v,))[1])
        return column(np.eye(theta.shape[0])).T
    return jacobian


def ht_objective_einsum(theta, parents, base_relatives, inverse_base_absolutes,
                        base_positions, weights, points, correspondences):
    pose = ht.pose_params(theta)
    absolutes = []
    for i in range(len(parents)):
        tr = np.eye(4)
        tr[:3, :3] = ht.euler_to_rotation(pose[i + 3, 0], pose[i + 3, 2], pose[i + 3, 1])
        relative = np.matmul(base_relatives[i], tr)
        absolutes.append(relative if parents[i] == -1
                         else np.matmul(absolutes[parents[i]], relative))
    transforms = np.stack([absolutes[i] @ inverse_base_absolutes[i]
                           for i in range(len(parents))])
    moved = np.einsum("vk,bjk->bvj", base_positions, transforms)[:, :, :3]
    positions = np.einsum("vb,bvj->vj", weights, moved)
    R = ht.angle_axis_to_rotation(pose[0]) * pose[1]
    posed = np.einsum("vj,ij->vi", positions, R) + pose[2]
    return (points - posed[correspondences]).reshape(-1)


# --------------------------------------------------------------------------- ode


def rhs_slices(x, y):
    r = np.empty_like(y)
    r[0] = x[0]
    r[1:] = x[1:] * y[:-1]
    return r


def rhs_hstack(x, y):
    return x * np.hstack(([1.0], y[:-1]))


def ode_inplace(x, s):
    h = 2 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = rhs_slices(x, y)
        k2 = rhs_slices(x, y + h / 2 * k1)
        k3 = rhs_slices(x, y + h / 2 * k2)
        k4 = rhs_slices(x, y + h * k3)
        y += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y[-1]


def ode_hstack(x, s):
    h = 2.0 / s
    y = np.zeros_like(x)
    for step in range(s):
        k1 = rhs_hstack(x, y)
        k2 = rhs_hstack(x, y + 0.5 * h * k1)
        k3 = rhs_hstack(x, y + 0.5 * h * k2)
        k4 = rhs_hstack(x, y + h * k3)
        y = y + (k1 + 2.0 * k2 + 2.0 * k3 + k4) * (h / 6.0)
    return y[x.shape[0] - 1]


def rhs_where_roll(x, y):
    return np.where(np.arange(x.shape[0]) == 0, x, x * np.roll(y, 1))


def ode_while(x, s):
    h = 2.0 / s
    y = np.zeros_like(x)
    step = 0
    while step < s:
        k1 = rhs_where_roll(x, y)
        k2 = rhs_where_roll(x, y + h / 2 * k1)
        k3 = rhs_where_roll(x, y + h / 2 * k2)
        k4 = rhs_where_roll(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        step += 1
    return y[-1]


class RK4:
    """A solver object holding its step count and size; the right-hand side a method."""

    def __init__(self, steps, t_final=2.0):
        self.steps = steps
        self.h = t_final / steps

    def rhs(self, x, y):
        return x * np.concatenate([x[:1] * 0 + 1, y[:-1]])

    def step(self, x, y):
        k1 = self.rhs(x, y)
        k2 = self.rhs(x, y + 0.5 * self.h * k1)
        k3 = self.rhs(x, y + 0.5 * self.h * k2)
        k4 = self.rhs(x, y + self.h * k3)
        return y + self.h * (k1 + 2 * k2 + 2 * k3 + k4) / 6

    def last(self, x):
        y = np.zeros(len(x))
        for _ in range(self.steps):
            y = self.step(x, y)
        return y[-1]


def _ode_class():
    solver = RK4(ode.inputs()[1])
    gradient = s2sgrad.grad(solver.last)
    return lambda x, s: gradient(x)


def _ode_value_and_grad():
    vg = s2sgrad.value_and_grad(ode.ode_last, 0)
    return lambda x, s: vg(x, s)[1]


# --------------------------------------------------------------------------- lstm


def lstm_model(weight, bias, hidden, cell, inp):
    gates = np.concatenate((inp, hidden, inp, hidden)) * weight + bias
    b = hidden.shape[0]
    forget = lstm.sigmoid(gates[:b])
    ingate = lstm.sigmoid(gates[b:2 * b])
    outgate = lstm.sigmoid(gates[2 * b:3 * b])
    change = np.tanh(gates[3 * b:])
    cell = cell * forget + ingate * change
    hidden = outgate * np.tanh(cell)
    return hidden, cell


def lstm_predict(w, w2, s, x):
    x = x * w2[0]
    for i in range(0, s.shape[0], 2):
        s[i], s[i + 1] = lstm_model(w[i], w[i + 1], s[i], s[i + 1], x)
        x = s[i]
    return x * w2[1] + w2[2]


def lstm_adbench(main_params, extra_params, state, sequence):
    total = 0.0
    count = 0
    s = state.copy()
    b = sequence.shape[1]
    inp = sequence[0]
    for t in range(sequence.shape[0] - 1):
        ypred = lstm_predict(main_params, extra_params, s, inp)
        ynorm = ypred - np.log(np.sum(np.exp(ypred)) + 2)
        total += np.sum(sequence[t + 1] * ynorm)
        count += b
        inp = sequence[t + 1]
    return -total / count


def lstm_functional(main_params, extra_params, state, sequence):
    hidden = [state[2 * j] for j in range(state.shape[0] // 2)]
    cell = [state[2 * j + 1] for j in range(state.shape[0] // 2)]
    total = 0.0
    for t in range(sequence.shape[0] - 1):
        hidden, cell, term = lstm.lstm_layers(main_params, extra_params, hidden, cell,
                                              sequence[t], sequence[t + 1])
        total = total + term
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


class LSTM(nn.Cell):
    """The two-layer LSTM as a MindSpore-style Cell: the weights Parameters, the
    objective its construct (hidden and cell rows updated in place)."""

    def __init__(self, main_params, extra_params):
        super().__init__()
        self.main_params = Parameter(Tensor(main_params), name="main_params")
        self.extra_params = Parameter(Tensor(extra_params), name="extra_params")

    def construct(self, state, sequence):
        return lstm.lstm_objective(self.main_params, self.extra_params, state, sequence)


def _lstm_cell():
    net = LSTM(*lstm.inputs()[:2])
    gradient = s2sgrad.grad(net, None, net.trainable_params())

    def call(main_params, extra_params, state, sequence):
        net.main_params.set_data(Tensor(main_params))
        net.extra_params.set_data(Tensor(extra_params))
        return tuple(np.asarray(g) for g in gradient(state, sequence))
    return call


def lstm_split_expit(main_params, extra_params, state, sequence):
    hidden = state[0::2].copy()
    cell = state[1::2].copy()
    total = 0.0
    for t in range(len(sequence) - 1):
        x = sequence[t] * extra_params[0]
        for j in range(len(hidden)):
            gates = np.concatenate((x, hidden[j], x, hidden[j])) * main_params[2 * j] \
                + main_params[2 * j + 1]
            f, i, o, c = np.split(gates, 4)
            cell[j] = cell[j] * expit(f) + expit(i) * np.tanh(c)
            hidden[j] = expit(o) * np.tanh(cell[j])
            x = hidden[j]
        ypred = x * extra_params[1] + extra_params[2]
        total += np.dot(sequence[t + 1], ypred - np.log(np.exp(ypred).sum() + 2.0))
    return -total / ((len(sequence) - 1) * sequence.shape[1])


# --------------------------------------------------------------------------- particle


def miss_lambda(w):
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    for i in range(particle.STEPS):
        xddot = -s2sgrad.grad(lambda p: particle.potential(p, w))(x)
        x = x + 0.1 * xdot
        xdot = xdot + 0.1 * xddot
    return x[0] ** 2


def particle_lambda(w):
    for i in range(particle.OUTER):
        w = w - 0.01 * s2sgrad.grad(miss_lambda)(w)
    return w


def miss_partial(w):
    force = s2sgrad.grad(functools.partial(particle.potential, w=w))
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    for i in range(particle.STEPS):
        x, xdot = x + 0.1 * xdot, xdot - 0.1 * force(x)
    return x[0] ** 2


miss_partial_gradient = s2sgrad.grad(miss_partial)


def particle_partial(w):
    for i in range(particle.OUTER):
        w -= 0.01 * miss_partial_gradient(w)
    return w


def miss_while(w):
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    i = 0
    while i < particle.STEPS:
        xddot = -s2sgrad.grad(particle.potential)(x, w)
        x = x + 0.1 * xdot
        xdot = xdot + 0.1 * xddot
        i += 1
    return x[0] ** 2


def particle_while(w):
    i = 0
    while i < particle.OUTER:
        w = w - 0.01 * s2sgrad.grad(miss_while)(w)
        i += 1
    return w


class Shot:
    """The integrator's constants held by an object; the force a gradient made once."""

    def __init__(self, dt=0.1, steps=particle.STEPS):
        self.dt = dt
        self.steps = steps
        self.force = s2sgrad.grad(particle.potential)

    def miss(self, w):
        x = np.array([0.0, 8.0])
        v = np.array([0.75, 0.0])
        for _ in range(self.steps):
            x, v = x + self.dt * v, v - self.dt * self.force(x, w)
        return x[0] ** 2


def _particle_class():
    shot = Shot()
    gradient = s2sgrad.grad(shot.miss)

    def descend(w):
        for _ in range(particle.OUTER):
            w = w - 0.01 * gradient(w)
        return w
    return descend


def _particle_value_and_grad():
    vg = s2sgrad.value_and_grad(particle.miss)

    def descend(w):
        for i in range(particle.OUTER):
            _, g = vg(w)
            w = w - 0.01 * g
        return w
    return s2sgrad.jit(descend)


# --------------------------------------------------------------------------- saddle


def inner_lambda(x, start):
    y = start
    for i in range(saddle.STEPS):
        y = y + saddle.ETA * s2sgrad.grad(lambda v: saddle.saddle_f(x, v))(y)
    return saddle.saddle_f(x, y)


def saddle_lambda(start):
    x = start
    for i in range(saddle.STEPS):
        x = x - saddle.ETA * s2sgrad.grad(lambda u: inner_lambda(u, start))(x)
    y = start
    for i in range(saddle.STEPS):
        y = y + saddle.ETA * s2sgrad.grad(lambda v: saddle.saddle_f(x, v))(y)
    return np.concatenate((x, y))


def inner_partial(x, start):
    ascend = s2sgrad.grad(functools.partial(saddle.saddle_f, x))
    y = start.copy()
    for i in range(saddle.STEPS):
        y += saddle.ETA * ascend(y)
    return saddle.saddle_f(x, y)


grad_inner_partial = s2sgrad.grad(inner_partial, 0)


def saddle_partial(start):
    x = start.copy()
    for i in range(saddle.STEPS):
        x -= saddle.ETA * grad_inner_partial(x, start)
    ascend = s2sgrad.grad(functools.partial(saddle.saddle_f, x))
    y = start.copy()
    for i in range(saddle.STEPS):
        y += saddle.ETA * ascend(y)
    return np.concatenate([x, y])


def inner_while(x, start):
    y = start
    i = 0
    while i < saddle.STEPS:
        y = y + saddle.ETA * s2sgrad.grad(saddle.saddle_f, grad_position=1)(x, y)
        i += 1
    return saddle.saddle_f(x, y)


def saddle_while(start):
    x = start
    i = 0
    while i < saddle.STEPS:
        x = x - saddle.ETA * s2sgrad.grad(inner_while, grad_position=0)(x, start)
        i += 1
    y = start
    i = 0
    while i < saddle.STEPS:
        y = y + saddle.ETA * s2sgrad.grad(saddle.saddle_f, grad_position=1)(x, y)
        i += 1
    return np.concatenate((x, y))


def inner_aux(x, start):
    y = start
    for _ in range(saddle.STEPS):
        y = y + saddle.ETA * saddle.grad_y(x, y)
    return saddle.saddle_f(x, y), y


grad_inner_aux = s2sgrad.grad(inner_aux, 0, has_aux=True)


def saddle_aux(start):
    x = start
    for _ in range(saddle.STEPS):
        g, _ = grad_inner_aux(x, start)
        x = x - saddle.ETA * g
    _, y = inner_aux(x, start)
    return np.concatenate((x, y))


SPELLINGS = {
    "ht": {
        "jacfwd": lambda: s2sgrad.jacfwd(ht.ht_objective),
        "jacrev": lambda: s2sgrad.jacrev(ht.ht_objective),
        "vmap(jvp) over eye": _ht_by_vmap,
        "np.dot, += (jacobian)": lambda: s2sgrad.jacobian(ht_objective_dot),
        "einsum skinning, jit(jacfwd)": lambda: s2sgrad.jit(s2sgrad.jacfwd(ht_objective_einsum)),
        "einsum skinning, jacobian": lambda: s2sgrad.jacobian(ht_objective_einsum),
    },
    "ode": {
        "y +=, slice-assigned rhs, 2 / s": lambda: s2sgrad.grad(ode_inplace, 0),
        "np.hstack rhs, y[n - 1]": lambda: s2sgrad.grad(ode_hstack, 0),
        "value_and_grad": _ode_value_and_grad,
        "while loop, np.where + np.roll rhs": lambda: s2sgrad.grad(ode_while, 0),
        "RK4 class, methods": _ode_class,
    },
    "lstm": {
        "ADBench helpers, tuple row writes": lambda: s2sgrad.grad(lstm_adbench, (0, 1)),
        "functional rows (lists)": lambda: s2sgrad.grad(lstm_functional, (0, 1)),
        "nn.Cell with Parameters": _lstm_cell,
        "np.split gates, expit, np.dot": lambda: s2sgrad.grad(lstm_split_expit, (0, 1)),
    },
    "particle": {
        "grad(lambda) per step, jit": lambda: s2sgrad.jit(particle_lambda),
        "grad(lambda) per step": lambda: particle_lambda,
        "functools.partial, w -=, jit": lambda: s2sgrad.jit(particle_partial),
        "value_and_grad, jit": _particle_value_and_grad,
        "while loops, grad(potential)(x, w) per step, jit": lambda: s2sgrad.jit(particle_while),
        "while loops, grad(potential)(x, w) per step": lambda: particle_while,
        "class holding dt, steps, force": _particle_class,
    },
    "saddle": {
        "grad(lambda) per step, jit": lambda: s2sgrad.jit(saddle_lambda),
        "grad(lambda) per step": lambda: saddle_lambda,
        "functools.partial, +=, jit": lambda: s2sgrad.jit(saddle_partial),
        "functools.partial, +=": lambda: saddle_partial,
        "while loops, grad(f, grad_position=1)(x, y), jit": lambda: s2sgrad.jit(saddle_while),
        "while loops, grad(f, grad_position=1)(x, y)": lambda: saddle_while,
        "grad has_aux (final y as aux), jit": lambda: s2sgrad.jit(saddle_aux),
        "grad has_aux (final y as aux)": lambda: saddle_aux,
    },
}

FORWARDS = {
    "ht": {"np.dot, += (jacobian)": ht_objective_dot,
           "einsum skinning, jacobian": ht_objective_einsum},
    "ode": {"y +=, slice-assigned rhs, 2 / s": ode_inplace,
            "np.hstack rhs, y[n - 1]": ode_hstack,
            "while loop, np.where + np.roll rhs": ode_while},
    "lstm": {"ADBench helpers, tuple row writes": lstm_adbench,
             "functional rows (lists)": lstm_functional,
             "np.split gates, expit, np.dot": lstm_split_expit},
}
