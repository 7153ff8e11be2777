"""Derivatives kept on the instance they are bound to, so that no cache keeps it alive.

A derivative object is kept longer than the call that made it: per instance by a
decorated method (``Derivative.__get__``: ``obj.loss`` is built once per instance), per
bound method or Cell by ``jvp``, ``vjp``, ``hvp``, ``jacfwd`` and ``jacrev``
(``derivative.derivative_for``).  It holds the bound method (the instance with it),
since a call such as ``Model(2.0).loss(x)`` has no other reference to its instance.  So
it is kept *on the instance*, in a ``KeptDerivatives`` in the instance's ``__dict__``
(``kept_on``): a cache beside the instance would keep every instance alive; on the
instance, the two go together (a reference cycle the garbage collector frees).  Copies
and pickles of the instance start without any (``KeptDerivatives`` copies as empty).
``instance_of(fn)`` names the instance a derivative of ``fn`` is bound to, if any.
"""
import inspect

from ..nn import Cell

#: the ``__dict__`` entry of an instance that holds the derivatives bound to it
_ENTRY = "__s2sgrad_derivatives__"


class KeptDerivatives(dict):
    """The derivatives kept on one instance (module doc): key -> derivative.  Equal to
    any other (an instance compared by its ``__dict__`` is not changed by it) and
    copied, deep-copied and pickled as empty (a derivative is bound to its instance)."""

    __hash__ = None

    def __eq__(self, other):
        return isinstance(other, KeptDerivatives)

    def __copy__(self):
        return KeptDerivatives()

    def __deepcopy__(self, memo):
        return KeptDerivatives()

    def __reduce__(self):
        return (KeptDerivatives, ())


def kept_on(instance):
    """The ``KeptDerivatives`` of ``instance`` (made at its first use), or None when the
    instance has no ``__dict__`` (``__slots__``): the caller keeps them itself then."""
    try:
        entries = vars(instance)
    except TypeError:
        return None
    kept = entries.get(_ENTRY)
    if kept is None:
        kept = entries[_ENTRY] = KeptDerivatives()
    return kept


def instance_of(fn):
    """The instance a derivative of ``fn`` is bound to: a bound method's ``__self__``, a
    Cell itself; None for a plain function."""
    if inspect.ismethod(fn):
        return fn.__self__
    return fn if isinstance(fn, Cell) else None
