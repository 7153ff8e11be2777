"""vmap of a loop-free function's forward-mode Jacobian: one batched sweep of its
vectorised form.

``vmap(jacfwd(f, p), in_axes)(*args)`` (per-example Jacobians) where ``f`` has a
vectorised form ``F`` (``compiler/batch/vectorise.py``; every example's row of ``F``
reads that example's rows only): the JVP of ``F`` along the tangent that is the basis
direction ``e_k`` of argument ``p`` in every example at once gives column ``k`` of every
example's Jacobian, so one batched sweep of ``F``'s forward-mode code with ``d`` tangents
(``d``: the size of one example's argument ``p``; ``ForwardFunction.jvps_call``) gives
them all, instead of one ``jacfwd`` call per example.  An unmapped argument ``p`` is
repeated along a new first axis (a view), each example differentiating its own row.

``columns(jvp, args, position, axis)``: those sweeps of any such batched function (a
gradient's too: ``vmap_rows``).  ``batched_jacobian(make_vmap, derivative, args, axes,
out_axes)`` gives ``(function, None)`` or ``(None, why not)``: ``jacfwd`` of one
position or a tuple of them (a tuple of Jacobians, one batched sweep each) without
``has_aux``, of a plain Python function of arrays (the differentiated ones of floats)
returning one array, not under ``S2SGRAD_BACKEND=numba``.
"""
import inspect

import numpy as np

from ..compiler.pipeline_vmap import still_read
from ..runtime.batched import sweep_width
from .vmap_grad import per_example_arguments, positions_of, tiled, vectorised_form


def batched_jacobian(make_vmap, derivative, args, axes, out_axes):
    """(function, None) or (None, why not): see the module doc."""
    forward = getattr(derivative, "forward", None)
    position = getattr(forward, "grad_position", None)
    single = isinstance(position, int)
    positions = positions_of(position, len(args))
    if getattr(derivative, "derivative_mode", None) != "jacfwd" or forward.has_aux or \
            positions is None:
        return None, "it is not a jacfwd object of positions given without has_aux"
    if not inspect.isfunction(forward.fn):
        return None, "it differentiates a method or another callable"
    prepared, why = per_example_arguments(args, axes, positions, out_axes)
    if prepared is None:
        return None, why
    args, axes, copied, mapped, out_axis = prepared
    found, why = vectorised_form(make_vmap, forward.fn, axes, args)
    if found is None:
        return None, why
    inner, generated, batched = found

    def per_example(*call_args):
        call_args = tiled(call_args, copied, call_args[mapped].shape[axes[mapped]])
        jacs = []
        for p in positions:                  # (each position's columns: jacfwd's tuple)
            jac = columns(lambda args, tangents, p=p: derivative.jvp_of_tangents(
                batched, args, [tangents], (p,)), call_args, p, axes[p])
            if jac is None:                  # no batched rule: the loop
                return None
            jacs.append(jac if out_axis == 0 else np.moveaxis(jac, 0, out_axis))
        return jacs[0] if single else tuple(jacs)
    per_example.source = generated.source
    per_example.holds = still_read(forward.fn, generated.reads)   # (vmap.py)
    return per_example, None


def columns(jvp, call_args, position, axis):
    """Every example's Jacobian ``(n,) + out + in`` of a function (batch first in its
    result, or where the function puts it: then there; every example's row reading that
    example's rows only) w.r.t. ``call_args[position]`` (mapped along ``axis``), by
    batched sweeps of its forward-mode code: ``jvp(args, tangents)`` (the function's
    JVPs along ``tangents``, directions first, of argument ``position``:
    ``jvp_of_tangents``), None where an operation has no batched rule."""
    x = call_args[position]
    shape = x.shape[:axis] + x.shape[axis + 1:]          # one example's
    size = int(np.prod(shape, dtype=np.int64))
    # tangent k: e_k of one example's argument, in every example (along the axis),
    # in blocks of directions of at most rt.sweep_width's numbers
    step, blocks = sweep_width(size, x), []
    for start in range(0, size, step):
        basis = np.eye(size, dtype=x.dtype)[start:start + step].reshape((-1,) + shape)
        tangents = np.ascontiguousarray(np.broadcast_to(
            np.expand_dims(basis, axis + 1), (len(basis),) + x.shape))
        block = jvp(tuple(call_args), tangents)
        if block is None:
            return None
        blocks.append(np.asarray(block))
    found = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    jac = np.moveaxis(np.asarray(found), 0, -1)          # (n,) + out + (size,)
    return jac.reshape(jac.shape[:-1] + shape)
