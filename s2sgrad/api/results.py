"""What a derivative gives back, in the form of what it is the derivative of.

Takes what the generated code returns; gives each gradient (or tangent) in the shape,
dtype and Tensor-ness of its input (``finish_gradient``; a jvp's tangents in the
structure of the outputs: ``like_outputs``) and each output as the function
itself gives it: Tensors when it ran on Tensors (``wrap_output``, in ``float_dtype``).
"""
import numpy as np

from ..tensor import Tensor


def finish_gradient(g, like):
    """The gradient in the form of its input: same shape, dtype, Tensor-ness; zeros if None."""
    # the common cases first (every planned call finishes its gradients): an array's
    # gradient as the code gives it, a Python float's as a Python float, a numpy float's
    # (a jvp's tangent of one) as it is
    kind = type(like)
    if kind is np.ndarray:
        if type(g) is np.ndarray and g.dtype == like.dtype and g.shape == like.shape:
            return g
    elif kind is float:
        if type(g) is np.float64 or type(g) is float:
            return float(g)
    elif kind is type(g) and isinstance(g, np.floating):
        return g
    base = np.asarray(like) if isinstance(like, Tensor) else like
    if g is None:
        g = np.zeros_like(base) if isinstance(base, np.ndarray) else 0.0
    if isinstance(base, np.ndarray):
        g = np.asarray(g)
        if g.shape != base.shape:
            g = np.broadcast_to(g, base.shape).copy()
        if base.dtype.kind in "fc" and g.dtype != base.dtype:
            g = g.astype(base.dtype)
    elif isinstance(base, np.generic):
        g = base.dtype.type(g) if base.dtype.kind in "fc" and np.ndim(g) == 0 else g
    else:
        g = float(g) if np.ndim(g) == 0 else g
    return Tensor(g) if isinstance(like, Tensor) else g


def like_outputs(tangent, output):
    """The output tangents in the outputs' structure, each with its output's shape and
    dtype (a number for a number): what a jvp gives beside the outputs."""
    if isinstance(output, (tuple, list)):
        items = [like_outputs(t, o) for t, o in zip(tangent, output)]
        return tuple(items) if isinstance(output, tuple) else items
    return finish_gradient(tangent, output)


def float_dtype(tensors):
    """The float dtype a Tensor computation on ``tensors`` gives (float32 by default)."""
    floats = [np.asarray(t).dtype for t in tensors if np.asarray(t).dtype.kind == "f"]
    return np.result_type(*floats) if floats else np.dtype(np.float32)


def wrap_output(value, dtype):
    """Outputs as the function gives them: arrays and numbers become Tensors when the
    function ran on Tensors (``dtype``: the float dtype of a bare number; compiled code
    returns Python floats where numpy has float32 scalars)."""
    if isinstance(value, tuple):
        return tuple(wrap_output(v, dtype) for v in value)
    if isinstance(value, list):
        return [wrap_output(v, dtype) for v in value]
    if dtype is not None and isinstance(value, (np.ndarray, np.generic)):
        return Tensor(np.asarray(value))
    if dtype is not None and isinstance(value, float):
        return Tensor(np.asarray(value, dtype=dtype))
    return value
