"""Check gradients against finite differences (like autograd's ``check_grads``
or ``torch.autograd.gradcheck``).

``check_grad(fn, args)`` differentiates ``fn`` with ``s2sgrad.grad`` and
compares every gradient element with a central finite difference of the sum
of all of ``fn``'s outputs, computed in float64.  It raises AssertionError
with a readable message (which argument, the largest absolute and relative
errors, the index of the worst element) when they disagree::

    import numpy as np
    from s2sgrad.testing import check_grad

    def f(x, w):
        return np.sum(np.tanh(x @ w))

    check_grad(f, (np.random.rand(3, 4), np.random.rand(4, 2)), grad_position=(0, 1))

``numerical_grad(fn, args, position)`` gives the finite-difference gradient
alone.  Both sum every output element (the sensitivity ``s2sgrad.grad``
seeds is ones on every output element), also across a tuple of outputs.
``numerical_jacobian(fn, args, position)`` keeps the outputs apart: the
central-difference Jacobian shaped ``output.shape + argument.shape`` (what
``s2sgrad.jacfwd`` / ``jacrev`` give; a tuple of them for a tuple of outputs),
so ``numerical_jacobian(s2sgrad.grad(f), args)`` is a Hessian to check against.

``fresh_function(fn)`` is a new function object with ``fn``'s code: ``grad(fn)`` is kept
per function and options (a loop builds once), so a test of what a first build does
differentiates a fresh one.
"""
import types

import numpy as np

from .tensor import Tensor
from .trees import flatten, is_tree, leaf_paths, unflatten

__all__ = ["check_grad", "fresh_function", "numerical_grad", "numerical_jacobian"]


def _total(value):
    """The float64 sum of every element of ``value`` (nested tuples/lists, Tensors, scalars)."""
    if isinstance(value, (tuple, list)):
        return sum((_total(v) for v in value), 0.0)
    if isinstance(value, Tensor):
        value = value.asnumpy()
    return float(np.sum(np.asarray(value, dtype=np.float64)))


def _as_float64(arg):
    """``arg`` with floating data in float64, kept in its kind (ndarray, Tensor, python float;
    a tuple, list or dict of them keeps its structure)."""
    if is_tree(arg):
        leaves, tree = flatten(arg)
        return unflatten(tree, [_as_float64(leaf) for leaf in leaves])
    if isinstance(arg, Tensor):
        arr = arg.asnumpy()
        return Tensor(arr.astype(np.float64)) if arr.dtype.kind == "f" else arg
    if isinstance(arg, np.ndarray):
        return arg.astype(np.float64) if arg.dtype.kind == "f" else arg
    if isinstance(arg, np.floating):
        return np.float64(arg)
    return arg


def _like(template, arr):
    """``arr`` (float64 ndarray) in the kind of ``template``: Tensor, ndarray, python float."""
    if isinstance(template, Tensor):
        return Tensor(arr)
    if isinstance(template, np.ndarray):
        return arr
    return float(arr)


def fresh_function(fn):
    """A new function object with ``fn``'s code, globals, defaults and closure: its
    derivatives are new objects, built afresh (module doc), never from the builds of
    another function object with its code (``api/derivative.py``'s ``derivative_for``)."""
    fresh = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                               fn.__closure__)
    fresh.__s2sgrad_fresh__ = True
    return fresh


def numerical_grad(fn, args, position=0, eps=1e-6):
    """The central finite-difference gradient of ``sum(fn(*args))`` w.r.t. ``args[position]``.

    Floating arguments are evaluated in float64.  Each element ``x[i]`` of
    the argument is moved by ``+eps`` and ``-eps`` and the gradient element
    is ``(F(x + eps e_i) - F(x - eps e_i)) / (2 eps)``, where ``F`` is the
    sum of every element of every output.  Returns a float64 ndarray of the
    argument's shape, or a python float for a scalar argument; for an argument
    that is a tuple, list or dict of arrays (a pytree), the same structure of
    such gradients, one per leaf.
    """
    args = [_as_float64(a) for a in args]
    base = args[position]
    if is_tree(base):
        leaves, tree = flatten(base)
        grads = []
        for k in range(len(leaves)):
            def moved_fn(leaf, k=k):
                trial = list(args)
                trial[position] = unflatten(tree, leaves[:k] + [leaf] + leaves[k + 1:])
                return fn(*trial)
            grads.append(_numerical_leaf(moved_fn, leaves[k], f"argument {position}"
                                         f"{leaf_paths(tree)[k]}", eps))
        return unflatten(tree, grads)

    def moved_fn(leaf):
        trial = list(args)
        trial[position] = leaf
        return fn(*trial)
    return _numerical_leaf(moved_fn, base, f"argument {position}", eps)


def numerical_jacobian(fn, args, position=0, eps=1e-6):
    """The central finite-difference Jacobian of ``fn(*args)`` w.r.t. ``args[position]``.

    The argument (an ndarray, Tensor or python float) is moved in float64, element by
    element, by ``+eps`` and ``-eps``; each output is read as a float64 array.  Returns
    an ndarray shaped ``output.shape + argument.shape`` (JAX's layout: ``()`` axes for a
    scalar), or a tuple of them when ``fn`` returns a tuple.
    """
    args = [_as_float64(a) for a in args]
    base = args[position]
    raw = base.asnumpy() if isinstance(base, Tensor) else base
    if is_tree(raw) or isinstance(raw, (bool, int, np.integer, np.bool_)) or (
            isinstance(raw, np.ndarray) and raw.dtype.kind != "f"):
        raise TypeError(f"argument {position} is not a floating-point array or number "
                        f"({type(raw).__name__}): numerical_jacobian moves one array")
    x = np.array(raw, dtype=np.float64)

    def outputs(value):
        moved = list(args)
        moved[position] = _like(base, value)
        out = fn(*moved)
        outs = out if isinstance(out, tuple) else (out,)
        return [np.asarray(o.asnumpy() if isinstance(o, Tensor) else o, dtype=np.float64)
                for o in outs], isinstance(out, tuple)

    at_x, several = outputs(x)
    jacobians = [np.zeros(o.shape + x.shape) for o in at_x]
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        for jac, a, b in zip(jacobians, outputs(up)[0], outputs(down)[0]):
            jac[(Ellipsis,) + idx] = (a - b) / (2.0 * eps)
    return tuple(jacobians) if several else jacobians[0]


def _numerical_leaf(moved_fn, base, label, eps):
    """The finite-difference gradient of ``sum(moved_fn(v))`` at ``v = base``."""
    raw = base.asnumpy() if isinstance(base, Tensor) else base
    if isinstance(raw, (bool, int, np.integer, np.bool_)) or (
            isinstance(raw, np.ndarray) and raw.dtype.kind != "f"):
        raise TypeError(f"{label} is not floating-point "
                        f"({type(raw).__name__}); only floating arguments have gradients")
    x = np.array(raw, dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        values = []
        for step in (eps, -eps):
            moved = x.copy()
            moved[idx] += step
            values.append(_total(moved_fn(_like(base, moved))))
        out[idx] = (values[0] - values[1]) / (2.0 * eps)
    if not isinstance(raw, np.ndarray):
        return float(out)
    return out


def _positions(grad_position):
    return (grad_position,) if isinstance(grad_position, int) else tuple(grad_position)


def check_grad(fn, args, grad_position=0, rtol=1e-5, atol=1e-7, eps=1e-6):
    """Assert that ``s2sgrad.grad(fn, grad_position)`` matches finite differences.

    ``args`` is the tuple of arguments to call ``fn`` with; floating
    arguments are converted to float64 first.  ``grad_position`` is an int
    or a tuple of ints, as for ``s2sgrad.grad``.  Each analytic gradient
    must have its argument's shape and satisfy, element-wise,
    ``|analytic - numerical| <= atol + rtol * |numerical|`` where the
    numerical gradient is ``numerical_grad(fn, args, position, eps)``.  An
    argument that is a tuple, list or dict of arrays (a pytree) must get a
    gradient of the same structure, checked leaf by leaf (``argument 0['w']``).

    Raises AssertionError naming the argument, its largest absolute and
    relative errors and the index of the worst element.  Returns the
    ``GradFunction`` it built, so a caller can look at ``.backend``,
    ``.fallback_reason`` or ``.source``.
    """
    from .api.reverse import grad

    args = tuple(_as_float64(a) for a in args)
    positions = _positions(grad_position)
    gfn = grad(fn, grad_position=grad_position)
    analytic = gfn(*args)
    if len(positions) == 1:
        analytic = (analytic,)
    name = getattr(fn, "__name__", repr(fn))
    for pos, got in zip(positions, analytic):
        want = numerical_grad(fn, args, pos, eps)
        if is_tree(args[pos]):
            _, tree = flatten(args[pos])
            got_leaves, got_tree = flatten(got) if is_tree(got) else ([got], None)
            want_leaves, _ = flatten(want)
            if got_tree != tree:
                raise AssertionError(
                    f"check_grad({name}): the gradient w.r.t. argument {pos} has the "
                    f"structure {_describe(got)}, but the argument is {_describe(args[pos])}")
            for path, g, w in zip(leaf_paths(tree), got_leaves, want_leaves):
                _compare(name, f"argument {pos}{path}", g, w, rtol, atol, eps, gfn)
        else:
            _compare(name, f"argument {pos}", got, want, rtol, atol, eps, gfn)
    return gfn


def _describe(value):
    """A short description of a gradient's structure: ``tuple of 2``, ``dict with keys
    ['w']``, ``ndarray``."""
    if isinstance(value, dict):
        return f"a dict with keys {list(value)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _compare(name, label, got, want, rtol, atol, eps, gfn):
    """Assert one analytic gradient (``got``) matches its finite differences (``want``)."""
    if isinstance(got, Tensor):
        got = got.asnumpy()
    got = np.asarray(got, dtype=np.float64)
    want_arr = np.asarray(want)
    if got.shape != want_arr.shape:
        raise AssertionError(
            f"check_grad({name}): the gradient w.r.t. {label} has shape "
            f"{got.shape}, but the argument has shape {want_arr.shape}")
    abs_err = np.abs(got - want_arr)
    bound = atol + rtol * np.abs(want_arr)
    if not np.all(np.isfinite(got)) or np.any(abs_err > bound) or np.any(np.isnan(abs_err)):
        rel_err = abs_err / np.maximum(np.abs(want_arr), np.finfo(np.float64).tiny)
        excess = np.where(np.isnan(abs_err), np.inf, abs_err - bound)
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), got.shape))
        where = f" at index {worst}" if got.ndim else ""
        raise AssertionError(
            f"check_grad({name}): the gradient w.r.t. {label} (shape "
            f"{want_arr.shape}) does not match central finite differences (eps={eps}): "
            f"max abs error {np.nanmax(abs_err) if abs_err.size else 0.0:.3e}, "
            f"max rel error {np.nanmax(rel_err) if rel_err.size else 0.0:.3e}; worst "
            f"element{where}: analytic {float(got[worst])!r}, "
            f"numerical {float(want_arr[worst])!r} "
            f"(rtol={rtol}, atol={atol}; backend {gfn.backend})")
