"""The primitives of the lowered form that are not Python or numpy callables, named once.

Most ``Op.primitive`` values are the callable the user's code called (``np.sin``,
``operator.add``).  The operations below have no such callable: the lowering
emits them for syntax (``x[i]``, ``a = b``, ``not in``, ``and``/``or``), for
array attributes and methods without a numpy function, and for s2sgrad's own
bookkeeping.  The rules (``s2sgrad.rules``) are registered under these names and
the passes test for them by these names; nothing spells them out elsewhere.
"""

GETITEM = "getitem"              # x[index]
ASSIGN = "assign"                # a = b (a loop-carried value, a rebinding)
LIST = "list"                    # a list built with append, made a run-time list
ASTYPE = "astype"                # x.astype(dtype)
NOT_IN = "not_in"                # a not in b
BOOLOP = "boolop"                # a and b, a or b
INTEGER_DTYPE = "integer_dtype"  # any conversion to an integer or boolean dtype
STOP_GRADIENT = "stop_gradient"  # ops.stop_gradient(x)
OPAQUE = "opaque"                # a call run as it is (random draws, run-time objects)
COPY = "copy"                    # a copy made so an in-place update cannot reach an argument
EFFECT = "effect"                # a call made for its effect only (print)
INDEX_R = "np.r_"                # np.r_[a, b, ...] on run-time values
INDEX_C = "np.c_"                # np.c_[a, b, ...]

ATTRIBUTE_PREFIX = "attr."       # x.<name> for an array attribute
METHOD_PREFIX = "method."        # x.<name>(...) for an array method without a numpy function


def attribute(name):
    """The primitive reading the array attribute ``name`` (``attribute("shape")``)."""
    return ATTRIBUTE_PREFIX + name


def method(name):
    """The primitive calling the array method ``name`` that has no numpy function."""
    return METHOD_PREFIX + name


SHAPE = attribute("shape")       # x.shape
