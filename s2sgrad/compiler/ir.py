"""The intermediate form the passes share: the contract between lowering and the reverse pass.

A lowered function (``LoweredFunction``) is a structured list of statements in
execution order: ``Op``, ``SetItem`` and ``ListAppend``, and ``If`` and ``Loop``
holding such lists.  Every ``Op`` assigns fresh variable names, so the value a
name holds never changes and the reverse sweep can read any forward value by its
name; the exceptions are a loop's carried variables (``Loop.carried``), assigned
before the loop and at the end of each iteration.  Operands are atoms: ``Var``
(a variable), ``Const`` (a value known when the gradient is built: a number, a
string, a dtype, a module, a Cell...), ``Seq`` (a tuple or list of atoms whose
length is known statically) or ``DictAtom`` (a dict known while building).
"""
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Var:
    """A variable of the generated function."""
    name: str


@dataclass(frozen=True, slots=True)
class Const:
    """A value known while building the gradient (never differentiated)."""
    value: object

    def __eq__(self, other):
        return isinstance(other, Const) and self.value is other.value

    def __hash__(self):
        return id(self.value)


@dataclass(frozen=True, slots=True)
class Seq:
    """A tuple (or list) of atoms whose length is known statically."""
    items: tuple
    kind: str = "tuple"


@dataclass(slots=True, eq=False)
class DictAtom:
    """A dict known while building, its keys constants: ``pairs`` of (key, value) atoms
    (``{param: grad}`` in a custom backward, a dict the function builds and reads)."""
    pairs: list


def atom_vars(atom):
    """The Var names an atom mentions, flattening Seqs, in order."""
    if isinstance(atom, Var):
        return [atom.name]
    if isinstance(atom, Seq):
        return [n for item in atom.items for n in atom_vars(item)]
    return []


@dataclass(slots=True)
class CustomBackward:
    """A user-supplied backward (``custom_vjp``, ``Cell.bprop``) at one call, lowered with
    the call: the reverse pass splices ``body`` in where the call's adjoint goes.

    ``body`` (straight-line Ops) reads the incoming gradient of the call's result
    through placeholder variables: ``incoming`` maps each placeholder's name to the
    result variable whose adjoint it stands for.  The reverse pass renames each
    placeholder to that adjoint and adds ``input_grads[k]`` (an atom; ``Const(None)``:
    no gradient) to the adjoint of ``inputs[k]``, and each gradient of ``param_grads``
    ((Var name of an internal Parameter, atom)) to that Parameter's adjoint.  ``tangent``
    is how forward mode goes through the call, where the rule gives one (a derivative
    object called inside: ``api/inside.py``).
    """
    name: str               # how the user names it in messages: ``Dense.bprop``
    inputs: list            # the forward's input atoms
    params: list            # Var names of the internal Parameters it may give gradients for
    incoming: dict          # placeholder name -> result Var name
    body: list              # the lowered backward: Ops reading inputs, results, placeholders
    input_grads: list       # per input, the atom of its gradient
    param_grads: list       # (Parameter Var name, the atom of its gradient)
    #: an expression naming ``tangent(*inputs, *input tangents)`` -> the result's tangent
    #: (flat leaves for several), for forward mode; None: the rule has none
    tangent: object = None
    #: an expression naming ``value_and_tangent(*inputs, *input tangents)`` -> ``(result,
    #: its tangent)`` from one run (a gradient's: forward over reverse computes both), for
    #: a call of one result whose tangent is wanted: it replaces the forward's call; None
    value_and_tangent: object = None

    def differentiable_operands(self):
        """The Var names the backward may give gradients to: inputs and parameters."""
        return [n for a in self.inputs for n in atom_vars(a)] + list(self.params)


@dataclass(slots=True)
class Op:
    """``targets = primitive(*args, **kwargs)``, one primitive operation.

    ``expr`` is the forward expression to emit (a gast node whose operands
    are Names of Vars and literals; None for the link Op of a custom rule, which
    runs nothing), ``rule`` its derivative rule (None when it has none),
    ``custom`` a user-supplied backward (a ``CustomBackward``) that replaces
    ``rule``, ``origin`` the user's source line it came from.
    """
    targets: tuple
    primitive: object
    args: tuple
    kwargs: dict
    expr: object
    origin: object
    rule: object = None
    custom: CustomBackward | None = None
    #: why the rule does not cover this form of the call (it then has no rule)
    bind_error: str | None = None
    #: a getitem whose index is basic (ints, slices): its result is a view, and a scalar
    #: result is cheap to recompute
    basic_index: bool = False
    #: a getitem reading an item of a list the function extends at run time
    list_base: bool = False

    def operand_atoms(self):
        return list(self.args) + list(self.kwargs.values())

    def operand_vars(self):
        return [n for a in self.operand_atoms() for n in atom_vars(a)]


@dataclass(slots=True)
class FreeValue:
    """A value the function reads from outside (global, closure, Cell attribute),
    passed to the generated function as an extra argument."""
    name: str
    obj: object
    path: str
    #: for an array: which of its dimensions were 1 when the code was built (the code is
    #: specialised on it, like the arguments'; ``shapes.unit_dimensions``)
    units: tuple | None = None
    #: where a later call reads it again (``front/guards.py``: a global or closure name,
    #: an attribute); None: the object itself is passed at every call
    source: object = None


@dataclass(slots=True)
class LoweredFunction:
    """The whole function in SSA form: what lowering gives the reverse pass.

    Besides the statements, lowering hands on what it learned about the variables
    while building: the reverse pass and the tapes read it to type tapes, to decide
    what is cheap to recompute and how adjoints of lists and in-place updates work.
    """
    name: str
    origin: object
    params: list            # Var names of the function's own positional parameters
    free: list              # FreeValue, in first-use order
    body: list = field(default_factory=list)
    output: object = None   # an atom: what the function returns
    #: the parsed root function (frontend.ParsedFunction)
    parsed: object = None
    #: per argument of the user's function: the indices in ``params`` of its leaves
    arg_leaves: list = field(default_factory=list)
    #: Var name -> rank, where it is known while building
    ndims: dict = field(default_factory=dict)
    #: Var name -> float dtype, where it is known while building
    dtypes: dict = field(default_factory=dict)
    #: symbolic shapes, where known (``compiler/analysis/shapes.py``; scalars are in ``ndims``)
    shapes: object = None
    #: Var name -> (dtype, ndim) of the arguments, as the caller's values had them
    param_types: dict = field(default_factory=dict)
    #: Var names known to hold Python ints (range loop variables, their arithmetic)
    int_vars: set = field(default_factory=set)
    #: Var names of arrays updated in place (``x[i] = v``)
    mutated: set = field(default_factory=set)
    #: Var names of lists extended at run time (``xs.append``), and tuple results
    lists: set = field(default_factory=set)
    #: Var name of an array updated in place -> the other variables that shared its
    #: memory when it was (views of it, the array a branch or loop copied it from;
    #: ``compiler/analysis/aliasing.py``): an adjoint reading one of them needs the update undone
    shared_at_write: dict = field(default_factory=dict)
    #: the Var names in ``lists`` that are tuple results (``w, v = np.linalg.eigh(a)``):
    #: their adjoint is a tuple, updated functionally (``rt.item_added``) so Numba types it
    tuples: set = field(default_factory=set)
    #: what was read from outside while lowering, checked again at each call
    #: (``front/guards.py``: Guard, in the order read)
    guards: list = field(default_factory=list)
    #: True when the code holds only for arguments of the sizes it was built for (a
    #: recursion that ends by shapes was unrolled: ``front/recursion.py``)
    by_shape: bool = False


@dataclass(slots=True)
class SetItem:
    """``target[index] = value``: an in-place update of the array variable ``target``.

    ``index_node`` is the index as a gast node over atoms, ``index`` its atom.
    """
    target: str
    index_node: object
    index: object
    value: object
    origin: object


@dataclass(slots=True)
class If:
    """``if test: body else: orelse`` on a value known only at run time."""
    test: object          # a Var (a Const test is folded while lowering)
    body: list
    orelse: list
    origin: object


@dataclass(slots=True)
class Loop:
    """A loop run at run time: ``for target in range(start, stop, step)`` or ``while test``.

    ``counter`` counts the iterations run (the adjoint loop runs that many);
    ``carried`` are the loop-carried variables (assigned before the loop by
    an ``assign`` Op and at the end of each iteration); ``test_ops`` compute
    a while loop's ``test`` before each iteration; ``break_flag`` is the
    variable that ends the loop after an iteration that ran ``break``.
    """
    kind: str             # 'range' or 'while'
    target: str | None    # the range loop's variable
    bounds: tuple         # (start, stop, step) atoms for 'range'
    test_ops: list
    test: object
    body: list
    carried: list
    counter: str
    break_flag: object
    origin: object


def walk_statements(statements):
    """Every statement of a structured list in forward order, a branch or loop before what
    it holds (a while loop's test too)."""
    for stmt in statements:
        yield stmt
        if isinstance(stmt, If):
            yield from walk_statements(stmt.body)
            yield from walk_statements(stmt.orelse)
        elif isinstance(stmt, Loop):
            yield from walk_statements(stmt.test_ops)
            yield from walk_statements(stmt.body)


def walk_ops(statements):
    """The simple statements (Op, SetItem, ListAppend) of a structured list, in forward
    order, descending into branches and loops."""
    return (s for s in walk_statements(statements) if not isinstance(s, (If, Loop)))


@dataclass(slots=True)
class ListAppend:
    """``target.append(value)`` on a list the function made and extends at run time."""
    target: str
    value: object
    origin: object
