"""vmap of a function that calls ``jvp`` with only its tangents mapped: one batched sweep.

``vmap(lambda v: jvp(f, (x,), (v,))[1])(V)`` (JAX's spelling of a Jacobian, or of
Jacobian-vector products along many directions) is ``f``'s forward-mode code run once
with every tangent carrying the batch first (``compiler/forward/batched.py``, as a
batched ``jacfwd`` sweep), instead of one ``jvp`` call per row of ``V``.

``recognised(fn)`` reads ``fn``'s source (a def or a lambda) once per code object and gives
a ``JvpOfTangents`` when its whole body is ``return jvp(g, primals, tangents)[1]`` (or
``return hvp(g, primals, tangents)``: forward mode over ``g``'s gradient code; a transform
says it batches so by ``__s2sgrad_vmap_tangents__``) with ``g`` a name, a dotted name, a
transform of one (``grad(f)``) or a lambda reading only values from outside ``fn`` (not
``fn``'s parameters), each primal a name, a dotted name or an expression of them with no
call (``PARAMS["theta"]``, ``theta * scale``: ``vmap_body.value_spec``) that reads no mapped
parameter, and each tangent a parameter; None otherwise (the caller keeps its loop).
``JvpOfTangents.run(fn, args, axes, out_axis)`` reads ``g`` and the primals at each call
(from ``fn``'s closure, globals or unmapped arguments, so nothing is kept from an earlier
call), moves each mapped axis first, runs the batched JVP (``ForwardFunction.jvps_call``, in
blocks of ``rt.sweep_width`` rows: ``jvp.__s2sgrad_vmap_tangents__``, which is how ``jvp``
is known here) and moves the batch to ``out_axis``. It gives None where that code cannot run
the call (an operation without a batched rule, a tuple output, a tuple or Tensor argument,
``S2SGRAD_BACKEND=numba``): the loop runs it.
"""
import types

import numpy as np

import gast

from ..backend.numba_backend import backend_mode
from ..runtime.batched import sweep_width
from .vmap_body import (UNKNOWN, callable_of, callable_spec, code_cache, dotted_name,
                        read_once, returned_expression, spec_reads, spec_value, value_of,
                        value_spec)

#: per code object, its JvpOfTangents or None (an LRU: ``vmap_body.read_once``)
_RECOGNISED = code_cache()


class JvpOfTangents:
    """How to run a recognised ``return jvp(g, primals, tangents)[1]`` (module doc):
    ``g`` (("name", dotted names) or ("lambda", its code object)), per primal how to
    read it (``vmap_body.value_spec``), per tangent the index of the parameter it is, and the parameters' names."""

    def __init__(self, jvp_names, g, primals, tangents, params, text, whole=False):
        self.jvp_names = jvp_names      # how the source names ``jvp`` (checked per call)
        self.whole = whole              # hvp: the call gives the tangent itself
        self.g, self.primals, self.tangents, self.params = g, primals, tangents, params
        self.text = text            # the source of the call, for the generated module's text
        self._last_lambda = None    # the lambda ``g`` last made (``_function``)

    def run(self, fn, args, axes, out_axis):
        """The batched result, or None (module doc).  ``axes``: per argument its mapped axis
        or None; ``out_axis``: where the batch goes in the result."""
        transform = value_of(fn, self.jvp_names)
        batched_jvp = getattr(transform, "__s2sgrad_vmap_tangents__", None)
        if backend_mode() == "numba" or any(not _plain(a) for a in args) or \
                batched_jvp is None or \
                getattr(transform, "__s2sgrad_returns_tangent__", False) is not self.whole:
            return None
        own = [self.params.index(name) for spec in self.primals for name in spec_reads(spec)
               if name in self.params]   # (x, an attribute of it: x.T, or x[0] * 2)
        if any(axes[i] is not None for i in own):
            return None              # a mapped primal: not a batch of tangents
        g = self._function(fn)
        primals = [spec_value(fn, spec, self.params, args) for spec in self.primals]
        if g is None or any(p is UNKNOWN or not _plain(p) for p in primals):
            return None
        mapped = [i for i, a in enumerate(axes) if a is not None]
        n = np.shape(args[mapped[0]])[axes[mapped[0]]]
        if n == 0:
            return None
        batches = []
        for p, i in zip(primals, self.tangents):
            t = np.asarray(args[i])
            if axes[i] is None:      # the same tangent for every row
                t = np.broadcast_to(t, (n,) + t.shape)
            elif axes[i]:
                t = np.moveaxis(t, axes[i], 0)
            if t.shape[1:] != np.shape(p):
                return None          # the loop's jvp says what is wrong
            batches.append(t)
        step = sweep_width(n, *primals)
        blocks = []
        for s in range(0, n, step):
            block = batched_jvp(g, tuple(primals), [t[s:s + step] for t in batches])
            if block is None:        # no batched sweep for this code (kept: not built again)
                return None
            blocks.append(block)
        if any(not isinstance(b, np.ndarray) or b.ndim == 0 or b.shape[0] != min(step, n)
               for b in blocks[:1]):
            return None              # a tuple output
        out = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=0)
        return out if out_axis == 0 else np.moveaxis(out, 0, out_axis)

    def _function(self, fn):
        kind, what = self.g
        if kind == "name":       # a function or an object, or one made at each call
            g = callable_of(fn, what)
            return g if callable(g) and g is not UNKNOWN else None
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        if any(name not in cells for name in what.co_freevars):
            return None
        closure = tuple(cells[name] for name in what.co_freevars)
        last = self._last_lambda
        if last is not None and last.__globals__ is fn.__globals__ and all(
                _same_contents(a, b) for a, b in zip(last.__closure__ or (), closure)):
            return last     # (its derivatives' builds and call plans found at once)
        self._last_lambda = types.FunctionType(what, fn.__globals__, "<lambda>", None,
                                               closure)
        return self._last_lambda


def _same_contents(a, b):
    """Whether two closure cells hold the same object, or tuples of the same objects (a
    lambda made anew per call reading ``*rest``: the same function then)."""
    try:
        x, y = a.cell_contents, b.cell_contents
    except ValueError:
        return False
    return x is y or (type(x) is tuple and type(y) is tuple and len(x) == len(y) and
                      all(i is j for i, j in zip(x, y)))


def _plain(value):
    """A float array or a float (what the batched code takes here)."""
    if type(value) is np.ndarray:
        return value.dtype.kind == "f"
    return type(value) is float or isinstance(value, np.floating)


def recognised(fn):
    """``fn``'s JvpOfTangents, or None (module doc); read once per code object (kept in
    an LRU)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None:
        return None
    return read_once(_RECOGNISED, fn, _read)


def _read(fn):
    from ..compiler.syntax.source import to_source
    found = returned_expression(fn)
    if found is None:
        return None
    params, node = found
    whole = isinstance(node, gast.Call)          # hvp(f, x, v): the tangent itself
    if not whole and not (isinstance(node, gast.Subscript) and
                          isinstance(node.slice, gast.Constant) and node.slice.value == 1
                          and isinstance(node.value, gast.Call)):
        return None
    call = node if whole else node.value
    names = dotted_name(call.func)
    transform = value_of(fn, names) if names is not None else None
    if names is None or names[0] in params or call.keywords or len(call.args) != 3 or \
            getattr(transform, "__s2sgrad_vmap_tangents__", None) is None or \
            getattr(transform, "__s2sgrad_returns_tangent__", False) is not whole:
        return None
    g_node, primal_node, tangent_node = call.args
    primal_nodes = _items(primal_node)
    tangent_nodes = _items(tangent_node)
    if primal_nodes is None or tangent_nodes is None or \
            len(primal_nodes) != len(tangent_nodes) or not primal_nodes:
        return None
    primals = [value_spec(p) for p in primal_nodes]
    tangents = [t.id if isinstance(t, gast.Name) else None for t in tangent_nodes]
    if any(p is None for p in primals) or any(t not in params for t in tangents):
        return None
    lambdas = [c for c in fn.__code__.co_consts if isinstance(c, types.CodeType)]
    if isinstance(g_node, gast.Lambda):
        inner = [n for n in gast.walk(g_node.body) if isinstance(n, gast.Name)]
        if len(lambdas) != 1 or lambdas[0].co_name != "<lambda>" or g_node.args.defaults \
                or any(n.id in params for n in inner):
            return None
        g = ("lambda", lambdas[0])
    else:
        spec = callable_spec(g_node, params)
        if spec is None or lambdas:
            return None
        g = ("name", spec)
    return JvpOfTangents(names, g, primals, [params.index(t) for t in tangents], params,
                         to_source(node).strip(), whole)


def _items(node):
    """The items of a tuple or list display, or ``[node]`` for one value."""
    if isinstance(node, (gast.Tuple, gast.List)):
        return list(node.elts)
    return [node]
