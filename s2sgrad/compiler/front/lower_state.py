"""The state the lowering mixins share, and the frames of the functions being lowered.

``LoweringState`` holds what lowering one root function builds up (the Ops, the
name allocator, what is known of each variable); the mixins that lower
statements (``lower_statements``), expressions (``lower_expressions``), calls
(``lower_calls``), Ops (``lower_ops``), atoms and captured values
(``lower_atoms``) and control flow (``lower_flow``) read and write it, and
``lower.Lowerer`` combines them.
"""
import gast

from ...errors import UnsupportedConstructError
from ..analysis.shapes import ShapeTable
from ..syntax.naming import NameAllocator
from ..syntax.source import to_source
from .lower_flow import unused_name


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
        return self.call_site or self.parsed.location(node)


class LoweringState:
    """What lowering one root function builds up; every mixin reads and writes it."""

    def __init__(self, arg_types=None, arg_trees=None):
        self.arg_types = arg_types    # per leaf parameter: (dtype, ndim), ("const", v) or None
        self.arg_trees = arg_trees    # per argument: its treedef (s2sgrad.trees), None = leaf
        self.param_types = {}   # Var name -> (dtype, ndim) of arguments, known while building
        self.ndims = {}         # Var name -> rank, where it is known while building
        self.dtypes = {}        # Var name -> float dtype, where it is known while building
        self.shapes = ShapeTable()  # Var name -> symbolic shape, where it is known
        self.nesting = 0        # > 0 inside a branch or loop body (code that may not run)
        self.names = NameAllocator()
        self.ops = []
        self.free = {}          # id(obj) -> FreeValue
        self.free_objects = []  # keeps the objects alive while ids are in use
        self.paths = {}         # id(obj) -> a readable path to a resolved object
        self.stack = []         # the functions being inlined, to catch recursion
        self.mutated = set()    # Var names of arrays updated in place (x[i] = v)
        self.local_stack = []   # local functions (def/lambda inside) being inlined
        self.cse = {}           # (primitive, operands) -> Var computed earlier in this block
        self.int_vars = set()   # Var names known to hold Python ints (range loop variables)
        self.lists = set()      # Var names of lists extended at run time (xs.append)
        self.tuples = set()     # those of them that are tuple results (eigh's (w, v)...)
        self.views = {}         # Var name -> the roots (fresh arrays) it may be a view of
        self.memory = {}        # Var name -> the roots whose memory it may share (aliasing.py)
        self.shared_at_write = {}  # Var name -> what shared its memory when it was written
        self.item_ranks = {}    # Var name of a run-time list -> the rank of its items
        self.made_ranks = {}    # Var name -> rank of an array made by np.zeros((2, 3)) & co
        self.entry_shapes = {}  # loop-carried Var name -> the shape it enters the loop with
        self.unassumed_shapes = set()  # loop-carried Var names whose shape changes in the loop
        self.varying_shapes = set()  # loop-carried Var names whose sizes may change in the loop
        self.stale_views = set()  # variables whose memory was updated in place behind them
        self.fields = {}          # Seq of a namedtuple argument -> its field names
        self.producers = {}       # Var name -> the primitive of the Op that assigned it
        self.words = {}           # expression node -> the parameter its value is passed to

    def unsupported(self, frame, node, what, hint):
        return UnsupportedConstructError(what, frame.parsed.location(node),
                                         source_segment(frame, node), hint)


def source_segment(frame, node):
    """The construct's own text (its first line), for messages; None if it has none."""
    try:
        text = to_source(node)
    except Exception:  # noqa: BLE001 - a message detail only
        return None
    return text.splitlines()[0] if text else None


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


def return_names(taken):
    """The flag and a maker of per-loop result names for ``lift_loop_returns``."""
    taken = set(taken)
    flag = unused_name("returned", taken)
    taken.add(flag)

    def values():
        name = unused_name("result", taken)
        taken.add(name)
        return name
    return flag, values
