"""The ``tensor_op`` decorator that turns a raw numpy function into an op,
and the ``Primitive`` base class of stateful ops (e.g. Dropout2D).

A raw function works on ndarrays only. The op made from it accepts Tensors
(also inside tuples and lists), gives Tensors, and keeps the raw function
as ``op.raw`` for the differentiator, which parses and inlines it.
"""
import functools

from ..tensor import no_scalar_widening, unwrap, wrap

__all__ = ["tensor_op", "Primitive", "rename_aliases", "opaque"]


def opaque(fn):
    """Mark ``fn`` as called as it is, never read, by the differentiator: its result carries
    no gradient (random draws, bookkeeping).  Generated code that calls it runs as Python."""
    fn.__s2sgrad_opaque__ = True
    return fn


def rename_aliases(op_name, aliases, kwargs):
    """Give ``kwargs`` with alias keywords renamed to their canonical names.

    ``aliases`` maps alias -> canonical name (e.g. ``{'dim': 'axis'}``).
    Raises TypeError when both an alias and its canonical name are given.
    """
    if not aliases or not kwargs:
        return kwargs
    renamed = {}
    for key, value in kwargs.items():
        canonical = aliases.get(key, key)
        if canonical in renamed:
            raise TypeError(f"{op_name}() got '{canonical}' twice (through the alias "
                            f"'{key}'); give only one of them")
        renamed[canonical] = value
    return renamed


def tensor_op(fn=None, *, check=None, aliases=None, promote=False):
    """Make an op from the raw numpy function ``fn``.

    Use as ``@tensor_op`` or ``@tensor_op(check=..., aliases=...)``.
    The op: renames alias keywords (``aliases``: alias -> parameter name of
    ``fn``), converts Tensor arguments to their ndarrays (no copy), runs
    ``check(*args, **kwargs)`` on them if given (argument validation that
    raises ValueError/TypeError), calls ``fn`` and wraps ndarray results
    (also inside tuples) into Tensors.

    The op has ``raw`` (= ``fn``), ``check``, ``aliases``,
    ``canonical_kwargs(kwargs)`` (the keywords with aliases renamed, as the op
    passes them to ``fn``: how the differentiator calls ``raw``) and
    ``__s2sgrad_op__ = True``; ``functools.wraps`` gives it ``fn``'s name,
    docstring, signature and ``__wrapped__``.
    """
    if fn is None:
        return functools.partial(tensor_op, check=check, aliases=aliases, promote=promote)
    name = fn.__name__
    aliases = dict(aliases or {})

    @functools.wraps(fn)
    def op(*args, **kwargs):
        args = unwrap(args)
        kwargs = {k: unwrap(v) for k, v in rename_aliases(name, aliases, kwargs).items()}
        if check is not None:
            check(*args, **kwargs)
        result = fn(*args, **kwargs)
        if promote:
            result = no_scalar_widening(result, args + tuple(kwargs.values()))
        return wrap(result)

    op.raw = fn
    op.check = check
    op.aliases = aliases
    op.canonical_kwargs = functools.partial(rename_aliases, name, aliases)
    op.__s2sgrad_op__ = True
    return op


class Primitive:
    """Base of ops that are classes: configured at construction, called on
    Tensors. ``name`` is the class name; repr ``Prim[Name]<attr=value, ...>``
    lists the attributes set in ``__init__`` that do not start with '_'."""

    @property
    def name(self):
        """The primitive's name (its class name)."""
        return type(self).__name__

    def __repr__(self):
        attrs = ", ".join(f"{k}={v}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"Prim[{self.name}]<{attrs}>" if attrs else f"Prim[{self.name}]"
