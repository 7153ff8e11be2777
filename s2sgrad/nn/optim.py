"""Optimizers with the reference's API: ``SGD``, ``Momentum``, ``Adam``.

An optimizer holds the Parameters it trains (``optimizer.parameters``, what
``value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)``
takes) and ``optimizer(grads)`` applies one step, updating each Parameter's
array in place with whole-array numpy operations (no loop over elements).
The update rules are the reference's documented formulas (see each class);
before them, as in the reference, each gradient gets ``weight_decay * p``
added and is then divided by ``loss_scale``.  Without parameter groups,
weight decay applies to the Parameters whose names contain neither 'beta'
nor 'gamma' (the reference's default filter); a group's ``weight_decay``
applies to all of the group's Parameters.

``params`` is a list of Parameters (``net.trainable_params()``) or a list of
groups ``{'params': [...], 'lr': ..., 'weight_decay': ...}`` (with an optional
``{'order_params': [...]}`` entry giving the order of ``parameters``).
``learning_rate`` is a number, a 0-d Tensor, or a sequence / 1-D Tensor with
one rate per step (step ``t`` uses item ``t``; after the last, the last).
"""
import numpy as np

from ..tensor import Parameter, ParameterTuple, Tensor
from .cell import Cell

_GROUP_KEYS = {"params", "lr", "weight_decay", "grad_centralization"}


class Optimizer(Cell):
    """Base class: parameters, learning rates, weight decay, loss scale and the step.

    Subclasses define ``_update(i, p, g, lr)``: update the array ``p`` (the i-th
    Parameter's own data) in place from the gradient ``g`` (same dtype and shape,
    weight decay and loss scale applied) at learning rate ``lr`` (a float).
    """

    def __init__(self, learning_rate, parameters, weight_decay=0.0, loss_scale=1.0):
        super().__init__(auto_prefix=False)
        name = type(self).__name__
        weight_decay = _non_negative(name, "weight_decay", weight_decay)
        loss_scale = _number(name, "loss_scale", loss_scale)
        if loss_scale <= 0:
            raise ValueError(f"For '{name}', loss_scale must be greater than 0, got {loss_scale}")
        params, lrs, decays, grouped = _groups(name, parameters, learning_rate, weight_decay)
        object.__setattr__(self, "_parameters", ParameterTuple(params))
        object.__setattr__(self, "_lrs", lrs)              # per parameter: array of rates
        object.__setattr__(self, "_decays", [            # per parameter: its weight decay
            d if grouped or ("beta" not in p.name and "gamma" not in p.name) else 0.0
            for p, d in zip(params, decays)])
        object.__setattr__(self, "loss_scale", loss_scale)
        object.__setattr__(self, "weight_decay", weight_decay)
        object.__setattr__(self, "is_group", grouped)
        object.__setattr__(self, "global_step", Tensor(np.array([0], dtype=np.int32)))
        object.__setattr__(self, "learning_rate", _lr_tensor(lrs[0]) if lrs else None)

    @property
    def parameters(self):
        """The Parameters this optimizer updates, as a ParameterTuple."""
        return self._parameters

    def _state(self, prefix, init="zeros"):
        """A ParameterTuple of zeros like each Parameter, named ``prefix.name``."""
        return ParameterTuple(
            Parameter(Tensor(np.zeros(p.shape, dtype=np.asarray(p).dtype)),
                      name=f"{prefix}.{p.name}", requires_grad=False)
            for p in self._parameters)

    def get_lr(self):
        """The learning rate(s) of the current step: a float32 Tensor, or a tuple of
        them (one per Parameter) when the groups give different rates."""
        step = int(np.asarray(self.global_step)[0])
        rates = [float(r[min(step, len(r) - 1)]) for r in self._lrs]
        if len(set(rates)) <= 1:
            return Tensor(np.float32(rates[0] if rates else 0.0))
        return tuple(Tensor(np.float32(r)) for r in rates)

    def construct(self, gradients):
        """Apply one step with ``gradients`` (one per Parameter, in ``parameters``' order:
        what ``value_and_grad(..., weights=optimizer.parameters)`` gives)."""
        name = type(self).__name__
        if isinstance(gradients, (Tensor, np.ndarray)) or not hasattr(gradients, "__len__"):
            raise TypeError(f"For '{name}', gradients must be a tuple of Tensors, one per "
                            f"parameter, got {type(gradients).__name__}")
        if len(gradients) != len(self._parameters):
            raise ValueError(f"For '{name}', got {len(gradients)} gradients for "
                             f"{len(self._parameters)} parameters; pass the gradients of "
                             f"value_and_grad(..., weights=optimizer.parameters)")
        step = int(np.asarray(self.global_step)[0])
        for i, (p, g) in enumerate(zip(self._parameters, gradients)):
            data = _own_array(p)
            g = np.asarray(g._data if isinstance(g, Tensor) else g)
            if g.shape != data.shape:
                raise ValueError(f"For '{name}', the gradient of '{p.name}' has shape "
                                 f"{g.shape}, but the parameter has shape {data.shape}")
            g = g.astype(data.dtype, copy=True)
            if self._decays[i]:
                g += data.dtype.type(self._decays[i]) * data
            if self.loss_scale != 1.0:
                g *= data.dtype.type(1.0 / self.loss_scale)
            lrs = self._lrs[i]
            self._update(i, data, g, float(lrs[min(step, len(lrs) - 1)]))
        self.global_step._data[...] = step + 1

    def _update(self, i, p, g, lr):
        raise NotImplementedError(f"{type(self).__name__} must define _update")

    def extend_repr(self):
        return f"parameters={len(self._parameters)}"


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (the reference's formula):

        v = momentum * v + (1 - dampening) * g      (at the first step: v = g)
        p = p - lr * (g + momentum * v)             if nesterov
        p = p - lr * v                              otherwise

    ``accum`` holds v and ``stat`` whether the first step is still to come.
    """

    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        name = type(self).__name__
        momentum = _non_negative(name, "momentum", momentum)
        dampening = _non_negative(name, "dampening", dampening)
        if not isinstance(nesterov, bool):
            raise TypeError(f"For '{name}', nesterov must be a bool, got "
                            f"{type(nesterov).__name__}")
        if nesterov and (momentum <= 0.0 or dampening != 0.0):
            raise ValueError(f"For '{name}', if 'nesterov' is true, 'momentum' must be > 0.0 "
                             f"and 'dampening' must equal to 0.0, but got 'momentum' is "
                             f"{momentum}, 'dampening' is {dampening}")
        object.__setattr__(self, "momentum", momentum)
        object.__setattr__(self, "dampening", dampening)
        object.__setattr__(self, "nesterov", nesterov)
        object.__setattr__(self, "accum", self._state("accum"))
        object.__setattr__(self, "stat", ParameterTuple(
            Parameter(Tensor(np.ones(p.shape, dtype=np.asarray(p).dtype)),
                      name=f"stat.{p.name}", requires_grad=False) for p in self._parameters))

    def _update(self, i, p, g, lr):
        u = p.dtype.type(self.momentum)
        v, first = _own_array(self.accum[i]), _own_array(self.stat[i])
        if first.flat[0]:
            v[...] = g
            first[...] = 0
        else:
            v *= u
            v += p.dtype.type(1.0 - self.dampening) * g
        p -= p.dtype.type(lr) * (g + u * v if self.nesterov else v)


class Momentum(Optimizer):
    """Gradient descent with momentum (the reference's formula):

        v = momentum * v + g                        (v starts at zeros: ``moments``)
        p = p - (lr * g + lr * momentum * v)        if use_nesterov
        p = p - lr * v                              otherwise
    """

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0,
                 use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        name = type(self).__name__
        momentum = _non_negative(name, "momentum", momentum)
        if not isinstance(use_nesterov, bool):
            raise TypeError(f"For '{name}', use_nesterov must be a bool, got "
                            f"{type(use_nesterov).__name__}")
        object.__setattr__(self, "momentum", momentum)
        object.__setattr__(self, "use_nesterov", use_nesterov)
        object.__setattr__(self, "moments", self._state("moments"))

    def _update(self, i, p, g, lr):
        u, lr = p.dtype.type(self.momentum), p.dtype.type(lr)
        v = _own_array(self.moments[i])
        v *= u
        v += g
        if self.use_nesterov:
            p -= lr * g + lr * u * v
        else:
            p -= lr * v


class Adam(Optimizer):
    """Adam (the reference's formula), t the step counted from 1:

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        l = lr * sqrt(1 - beta2**t) / (1 - beta1**t)
        p = p - l * m / (sqrt(v) + eps)
        (use_nesterov: p = p - l * (beta1 * m + (1 - beta1) * g) / (sqrt(v) + eps);
         use_amsgrad: vhat = max(vhat, v) takes the place of v in the update)

    ``moment1``, ``moment2`` (and ``vhat``) hold m, v (and vhat); ``beta1_power`` and
    ``beta2_power`` hold beta1**t and beta2**t.
    """

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0,
                 use_amsgrad=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        name = type(self).__name__
        beta1, beta2, eps = (_number(name, k, v) for k, v in
                             (("beta1", beta1), ("beta2", beta2), ("eps", eps)))
        for key, value in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 < value < 1.0:
                raise ValueError(f"For '{name}', {key} must be in range (0.0, 1.0), "
                                 f"got {value}")
        if eps <= 0.0:
            raise ValueError(f"For '{name}', eps must be greater than 0, got {eps}")
        for key, value in (("use_locking", use_locking), ("use_nesterov", use_nesterov),
                           ("use_amsgrad", use_amsgrad)):
            if not isinstance(value, bool):
                raise TypeError(f"For '{name}', {key} must be a bool, got "
                                f"{type(value).__name__}")
        if use_nesterov and use_amsgrad:
            raise ValueError(f"For '{name}', use_nesterov and use_amsgrad cannot both be True")
        for key, value in (("beta1", beta1), ("beta2", beta2), ("eps", eps),
                           ("use_locking", use_locking), ("use_nesterov", use_nesterov),
                           ("use_amsgrad", use_amsgrad)):
            object.__setattr__(self, key, value)
        object.__setattr__(self, "moment1", self._state("moment1"))
        object.__setattr__(self, "moment2", self._state("moment2"))
        object.__setattr__(self, "vhat", self._state("vhat") if use_amsgrad else None)
        object.__setattr__(self, "beta1_power", Parameter(Tensor(np.float32(1.0)),
                                                          name="beta1_power",
                                                          requires_grad=False))
        object.__setattr__(self, "beta2_power", Parameter(Tensor(np.float32(1.0)),
                                                          name="beta2_power",
                                                          requires_grad=False))

    def construct(self, gradients):
        # beta**t of this step, shared by every parameter (kept in float64 for the
        # update; the Parameters show them as the reference's float32)
        t = int(np.asarray(self.global_step)[0]) + 1
        object.__setattr__(self, "_powers", (self.beta1 ** t, self.beta2 ** t))
        self.beta1_power.set_data(np.float32(self._powers[0]))
        self.beta2_power.set_data(np.float32(self._powers[1]))
        super().construct(gradients)

    def _update(self, i, p, g, lr):
        t = p.dtype.type
        b1, b2 = t(self.beta1), t(self.beta2)
        b1_t, b2_t = self._powers
        m, v = _own_array(self.moment1[i]), _own_array(self.moment2[i])
        m *= b1
        m += (t(1) - b1) * g
        v *= b2
        v += (t(1) - b2) * g * g
        if self.use_amsgrad:
            vhat = _own_array(self.vhat[i])
            np.maximum(vhat, v, out=vhat)
            v = vhat
        scaled = t(lr * np.sqrt(1.0 - b2_t) / (1.0 - b1_t))
        top = b1 * m + (t(1) - b1) * g if self.use_nesterov else m
        p -= scaled * top / (np.sqrt(v) + t(self.eps))


# ---------------------------------------------------------------- helpers


def _own_array(param):
    """The writable array a Parameter holds (updated in place by the step)."""
    data = param._data
    if not data.flags.writeable:
        param.set_data(data.copy())
        data = param._data
    return data


def _number(cls, key, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"For '{cls}', {key} must be a float, got {type(value).__name__}: "
                        f"{value!r}")
    return float(value)


def _non_negative(cls, key, value):
    value = _number(cls, key, value)
    if value < 0.0:
        raise ValueError(f"For '{cls}', {key} must be at least 0.0, got {value}")
    return value


def _rates(cls, learning_rate):
    """The learning rate as a 1-D float array of per-step rates (one item: constant)."""
    if isinstance(learning_rate, bool):
        raise TypeError(f"For '{cls}', learning_rate must be a float, an int, a Tensor or a "
                        f"list of per-step rates, got bool")
    if isinstance(learning_rate, (int, float, np.integer, np.floating)):
        rates = np.array([float(learning_rate)])
    elif isinstance(learning_rate, (Tensor, np.ndarray, list, tuple)):
        rates = np.asarray(learning_rate._data if isinstance(learning_rate, Tensor)
                           else learning_rate, dtype=np.float64)
        if rates.ndim > 1 or rates.size == 0:
            raise ValueError(f"For '{cls}', learning_rate as a Tensor or list must be a "
                             f"scalar or 1-D with at least one rate, got shape {rates.shape}")
        rates = rates.reshape(-1)
    else:
        raise TypeError(f"For '{cls}', learning_rate must be a float, an int, a Tensor or a "
                        f"list of per-step rates, got {type(learning_rate).__name__}")
    if np.any(rates < 0):
        raise ValueError(f"For '{cls}', learning_rate must be at least 0, got {learning_rate}")
    return rates


def _lr_tensor(rates):
    return Parameter(Tensor(np.float32(rates[0]) if len(rates) == 1 else
                            rates.astype(np.float32)), name="learning_rate",
                     requires_grad=False)


def _groups(cls, parameters, learning_rate, weight_decay):
    """Parameters, per-parameter rates and weight decays, and whether grouped."""
    if isinstance(parameters, Parameter) or not hasattr(parameters, "__iter__"):
        raise TypeError(f"For '{cls}', params must be a list of Parameters (e.g. "
                        f"net.trainable_params()) or a list of parameter groups, got "
                        f"{type(parameters).__name__}")
    items = list(parameters)
    if not items:
        raise ValueError(f"For '{cls}', params is empty; pass net.trainable_params()")
    rates = _rates(cls, learning_rate)
    if not all(isinstance(x, dict) for x in items):
        for p in items:
            if not isinstance(p, Parameter):
                raise TypeError(f"For '{cls}', every item of params must be a Parameter (or "
                                f"every item a group dict), got {type(p).__name__}")
        return items, [rates] * len(items), [weight_decay] * len(items), False
    params, lrs, decays, order = [], [], [], None
    for group in items:
        if "order_params" in group:
            order = list(group["order_params"])
            continue
        unknown = set(group) - _GROUP_KEYS
        if unknown or "params" not in group:
            raise ValueError(f"For '{cls}', a parameter group takes the keys 'params', 'lr', "
                             f"'weight_decay' (and 'order_params' alone), got "
                             f"{sorted(group)}")
        if group.get("grad_centralization"):
            raise ValueError(f"For '{cls}', grad_centralization is not supported by s2sgrad; "
                             f"leave it out of the group")
        group_rates = _rates(cls, group["lr"]) if "lr" in group else rates
        decay = _non_negative(cls, "weight_decay", group.get("weight_decay", weight_decay))
        for p in group["params"]:
            if not isinstance(p, Parameter):
                raise TypeError(f"For '{cls}', a group's params must be Parameters, got "
                                f"{type(p).__name__}")
            params.append(p)
            lrs.append(group_rates)
            decays.append(decay)
    if order is not None:
        where = {id(p): k for k, p in enumerate(params)}
        missing = [p.name for p in order if id(p) not in where]
        if missing or len(order) != len(params):
            raise ValueError(f"For '{cls}', order_params must list exactly the grouped "
                             f"Parameters; not in a group: {missing}")
        index = [where[id(p)] for p in order]
        params = [params[k] for k in index]
        lrs = [lrs[k] for k in index]
        decays = [decays[k] for k in index]
    return params, lrs, decays, True
