"""Initial values for layer Parameters (``weight_init`` / ``bias_init`` arguments)."""
import numpy as np

from .. import tensor as _tensor

NORMAL_SIGMA = 0.01


def _draw_uniform(shape, bound):
    return _tensor.module_rng().uniform(-bound, bound, size=shape)


def _draw_normal(shape, bound):
    return _tensor.module_rng().normal(0.0, NORMAL_SIGMA, size=shape)


_NAMED = {
    "zeros": lambda shape, bound: np.zeros(shape),
    "ones": lambda shape, bound: np.ones(shape),
    "normal": _draw_normal,
    "uniform": _draw_uniform,
}


def initial_value(init, shape, bound, arg_name):
    """Give a float32 ndarray of ``shape`` for the initialiser ``init``.

    ``init`` is None (uniform in +-``bound``), one of ``'zeros'``, ``'ones'``,
    ``'normal'`` (N(0, 0.01)), ``'uniform'`` (+-``bound``), a python number
    (a constant), or a Tensor / ndarray of exactly ``shape`` (copied).
    ``arg_name`` names the argument in error messages. Random draws use the
    RNG that ``set_seed`` seeds.
    """
    shape = tuple(shape)
    if init is None:
        init = "uniform"
    if isinstance(init, str):
        make = _NAMED.get(init.lower())
        if make is None:
            raise ValueError(f"{arg_name} '{init}' is not supported; expected one of "
                             f"{sorted(_NAMED)}, a number, or a Tensor of shape {shape}")
        return np.asarray(make(shape, bound), dtype=np.float32)
    if isinstance(init, (int, float)) and not isinstance(init, bool):
        return np.full(shape, init, dtype=np.float32)
    if isinstance(init, (_tensor.Tensor, np.ndarray)):
        value = np.array(init, dtype=np.float32)
        if value.shape != shape:
            raise ValueError(f"{arg_name} has shape {value.shape}, but the layer needs "
                             f"shape {shape}")
        return value
    raise TypeError(f"{arg_name} must be None, a str, a number or a Tensor, but got "
                    f"{type(init).__name__}")
