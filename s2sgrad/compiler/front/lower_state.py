"""The state of lowering one root function, and the frames of the functions inlined.

``LoweringState`` is what lowering one root function builds up besides what is known
of each variable (``analysis.typeinfo.TypeInfo``) and of their memory
(``analysis.aliasing.AliasTracking``): the Ops, the name allocator, the values
captured from outside, the functions being inlined.  ``Frame`` is one function being
lowered (its variables, its result).  Each lowerer of ``lower.py`` is handed the
state, and says in its constructor what else it reads.
"""
import gast

from ..syntax.naming import NameAllocator
from ..syntax.origins import user_location
from .guards import Guards
from .recursion import CallStack


class LocalFunction:
    """A ``def`` or ``lambda`` inside the function being differentiated: its syntax, the
    frame that defined it (its closure) and its defaults, lowered where it was defined."""

    def __init__(self, node, frame):
        self.node = node
        self.frame = frame
        self.defaults = []

    def __repr__(self):
        return f"<local function {self.node.name}>"


class Frame:
    """The state of one function being lowered: its source, its variables, its result."""

    def __init__(self, parsed, env, call_site=None):
        self.parsed = parsed
        self.env = env
        self.output = None
        self.returned = False
        #: for s2sgrad's own functions (ops, layers), the user's line that called them
        self.call_site = call_site
        #: the frame that called this one inline, and the one a local function was
        #: defined in: their names still reach arrays this frame may update in place
        self.caller = None
        self.closure = None
        #: the word an inlined callee's result is known by at the call (the parameter of
        #: the outer callee it is passed to): its temporary's name where the result's
        #: own description is taken (``NameAllocator.temp``)
        self.word = None

    def location(self, node):
        """Where an op made from ``node`` comes from, as the user would name it."""
        return self.call_site or user_location(self.parsed.location(node))


class LoweringState:
    """The Ops of one lowering and what they are built with: the block being lowered
    (``ops``, its reusable values ``cse``, ``nesting``), names, captured values."""

    def __init__(self):
        self.names = NameAllocator()
        self.ops = []           # the block being lowered (a branch or loop body: ``collect``)
        self.cse = {}           # (primitive, operands) -> Var computed earlier in this block
        self.nesting = 0        # > 0 inside a branch or loop body (code that may not run)
        self.free = {}          # id(obj) -> FreeValue
        self.free_objects = []  # keeps the objects alive while ids are in use
        self.guards = Guards()  # what was read from outside, to check at each call
        self.paths = {}         # id(obj) -> a readable path to a resolved object
        self.stack = CallStack()  # the functions being inlined: recursion unrolled or refused
        self.fields = {}        # Seq of a namedtuple argument -> its field names
        self.producers = {}     # Var name -> the primitive of the Op that assigned it
        self.words = {}         # expression node -> the parameter its value is passed to
        #: Var names that may have no value at run time, as their Python names may not:
        #: bound only in a loop body that may run zero times, or on one side of a branch
        #: (no copy is made of them where Python reads nothing: ``lower_loops``)
        self.unbound = set()
        #: the function is compiled, not differentiated (``s2sgrad.jit``): a derivative
        #: object that is not inlined is called as it is, with no rule lowered for it
        self.primal = False

    def collect(self, lower):
        """Run ``lower`` with a fresh op list (and no values to reuse from outside it: a
        branch or a loop body); returns the ops it appended."""
        saved, self.ops = self.ops, []
        saved_cse, self.cse = self.cse, {}
        self.nesting += 1
        try:
            lower()
            return self.ops
        finally:
            self.ops, self.cse = saved, saved_cse
            self.nesting -= 1


def name_of(node):
    """The identifier of a Name node, None for any other node."""
    return node.id if isinstance(node, gast.Name) else None


def join_path(base, attr):
    """``base.attr``, or ``attr`` alone at the root: the readable path of a resolved object."""
    return f"{base}.{attr}" if base else attr


def identifier(path):
    """A variable name made from a readable path: ``self.fc1.weight`` -> ``fc1_weight``."""
    name = "".join(c if c.isalnum() else "_" for c in path).strip("_") or "value"
    if name.startswith("self_"):
        name = name[5:]
    return name if not name[0].isdigit() else "v" + name
