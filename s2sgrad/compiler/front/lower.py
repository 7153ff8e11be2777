"""Lowering: a parsed function -> the IR of ``ir.py`` (SSA, ANF), callees inlined.

Takes the root function (or a Cell's construct) and gives a
``LoweredFunction``: one primitive operation per ``Op``, every operand an
atom, every name resolved; run-time ``if``, ``for`` and ``while`` (with
``break``, ``continue``, early ``return`` and comprehensions) become ``If`` and
``Loop`` statements (``lower_branches``, ``lower_loops``, ``lower_for``).  On the way it

- inlines calls to the user's own functions, to bound methods, to s2sgrad
  ops (their raw numpy body) and to Cells (their ``construct``), so that
  only primitives with rules remain;
- folds what is known while building: ``if`` on a Cell attribute or on an
  option string, ``for`` over a Cell's fixed children, tuple indexing and
  unpacking, arithmetic on constants;
- turns arrays read from globals, closures and Cell attributes into extra
  arguments of the generated function (``FreeValue``), so the generated
  code never holds data;
- raises ``UnsupportedConstructError`` naming the user's line and saying
  what to do for what it cannot lower (``messages.py`` names the constructs).

``Lowerer`` composes the pieces, each an object that holds exactly what it uses:
the state of this lowering (``lower_state.LoweringState``: Ops, names, captured
values), what is known of each variable (``analysis.typeinfo.TypeInfo``) and of
their memory (``analysis.aliasing.AliasTracking``), and the lowerers of atoms
(``lower_atoms``), Ops (``lower_ops``), expressions, calls, statements, branches,
loops and ``for`` loops, which recurse into one another through their ``connect``.
"""
import gast

from ...errors import RecursionUnrollError, UnsupportedConstructError
from ..analysis.aliasing import AliasTracking
from ..analysis.typeinfo import TypeInfo
from ..ir import Const, DictAtom, LoweredFunction, Seq, Var
from ..syntax.source import unsupported
from . import literals
from .frontend import parse_function
from .jumps import structured_body
from .lower_atoms import Atoms
from .lower_branches import BranchLowering
from .lower_calls import CallLowering
from .lower_expressions import ExpressionLowering
from .lower_for import ForLowering
from .lower_loops import LoopLowering
from .lower_ops import Emitter
from .lower_state import Frame, LoweringState
from .lower_statements import StatementLowering


def _own_nodes(fdef):
    """The nodes of a function's body, not descending into functions defined in it."""
    todo = list(fdef.body)
    while todo:
        node = todo.pop(0)
        yield node
        if not isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            todo.extend(gast.iter_child_nodes(node))


def _leaf_hint(hint, key):
    """The parameter name of a dict argument's item: ``params`` and 'w' -> ``params_w``."""
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in str(key))
    return f"{hint}_{text}" if text else hint


def lower_function(fn, bound_self=None, arg_types=None, arg_trees=None, primal=False):
    """(the Lowerer, the LoweredFunction) of ``fn``; see ``Lowerer`` (``primal``: the
    function is compiled, not differentiated: ``pipeline_primal.py``).  A recursion refused
    because a run-time condition decides whether it recurses is lowered again with the
    arguments' shapes known as numbers (``x.shape[0] == 1`` then folds): the result's
    ``by_shape`` says the code holds only for arguments of those sizes."""
    lowerer = Lowerer(arg_types, arg_trees, primal=primal)
    try:
        return lowerer, lowerer.lower(fn, bound_self)
    except RecursionUnrollError as exc:
        if not exc.at_run_time or not any(t and len(t) > 3 for t in arg_types or ()):
            raise
    lowerer = Lowerer(arg_types, arg_trees, by_shape=True, primal=primal)
    return lowerer, lowerer.lower(fn, bound_self)


class Lowerer:
    """Lowers one root function and everything it calls into one LoweredFunction.

    ``arg_types``: per leaf parameter, (dtype, ndim[, unit dimensions[, shape]]),
    ("const", value) or None; ``arg_trees``: per argument, its treedef (s2sgrad.trees),
    None for a leaf; ``by_shape``: the arguments' shapes are known as numbers (a
    recursion that ends by shapes unrolls; see ``lower_function``); ``primal``: the
    function is compiled, not differentiated (``LoweringState.primal``).  One Lowerer
    lowers one function (``lower``)."""

    def __init__(self, arg_types=None, arg_trees=None, by_shape=False, primal=False):
        self.arg_types = arg_types
        self.arg_trees = arg_trees
        self.by_shape = by_shape
        self.state = LoweringState()
        self.state.primal = primal
        self.types = TypeInfo()
        self.types.shapes.exact = by_shape
        self.aliases = AliasTracking(self.types)
        atoms = Atoms(self.state, self.types)
        emitter = Emitter(self.state, self.types, self.aliases, atoms)
        expressions = ExpressionLowering(self.state, self.types, atoms, emitter)
        self.calls = CallLowering(self.state, self.types, atoms, emitter, expressions)
        self.statements = StatementLowering(self.state, self.types, self.aliases, atoms,
                                            emitter)
        branches = BranchLowering(self.state, self.types, self.aliases, emitter)
        loops = LoopLowering(self.state, self.types, self.aliases, atoms, emitter)
        fors = ForLowering(self.state, self.types, atoms, emitter, loops)
        expressions.connect(self.calls, self.statements, branches)
        self.calls.connect(self.statements)
        self.statements.connect(expressions, self.calls, branches, loops, fors)
        branches.connect(self.statements)
        loops.connect(expressions, self.statements)
        fors.connect(expressions, self.statements)

    def lower(self, fn, bound_self=None):
        """Lower ``fn`` (a function; ``bound_self`` when it is a method such as construct)."""
        parsed = parse_function(fn)
        self.state.names.claim_source(parsed.node)
        args = parsed.node.args
        if args.vararg is not None or args.kwarg is not None:
            raise UnsupportedConstructError(
                "s2sgrad differentiates functions with named parameters only",
                parsed.location(parsed.node), f"def {parsed.name}(...*args/**kwargs)",
                "list the parameters explicitly")
        env = {}
        params = []
        arg_nodes = list(args.posonlyargs) + list(args.args)
        if bound_self is not None:
            self_node, arg_nodes = arg_nodes[0], arg_nodes[1:]
            env[self_node.id] = Const(bound_self)
            self.state.paths[id(bound_self)] = ""
        arg_leaves, atoms = [], []
        for i, node in enumerate(arg_nodes + list(args.kwonlyargs)):
            tree = self.arg_trees[i] if self.arg_trees and i < len(self.arg_trees) else None
            first = len(params)
            env[node.id] = self.argument_atom(tree, node.id, params)
            atoms.append(env[node.id])
            arg_leaves.append(list(range(first, len(params))))
        frame = Frame(parsed, env)
        if bound_self is not None and getattr(type(bound_self), "bprop", None) is not None \
                and fn is getattr(type(bound_self), "construct", None) \
                and not self.state.primal:
            # a Cell with its own backward, differentiated as a whole
            frame.output = self.calls.cell_call(frame, parsed.node, bound_self, tuple(atoms), {},
                                                None)
        else:
            self.state.stack.push(frame, parsed.node, parsed.fn, parsed.name)
            self.statements.lower_body(frame, structured_body(parsed.node))
            self.state.stack.pop()
        self.check_output(frame, parsed)
        types = self.types
        return LoweredFunction(
            parsed.name, parsed.location(parsed.node), params, list(self.state.free.values()),
            self.state.ops, frame.output if frame.output is not None else Const(None),
            parsed=parsed, arg_leaves=arg_leaves, ndims=types.ndims, dtypes=types.dtypes,
            shapes=types.shapes, param_types=types.param_types, int_vars=types.int_vars,
            mutated=self.aliases.mutated, lists=types.lists,
            shared_at_write=self.aliases.shared_with_written(), tuples=types.tuples,
            guards=list(self.state.guards),
            by_shape=self.by_shape or getattr(fn, "__s2sgrad_by_shape__", False))

    def check_output(self, frame, parsed):
        """The differentiated function returns numbers, arrays and tuples/lists of them; a
        dict (or a function, or another object) is refused at its return line, saying
        what to write (an object made while building says it: ``__s2sgrad_not_a_value__``,
        a vjp's pullback)."""
        hints = []

        def bad(atom):
            if isinstance(atom, Seq):
                return next((b for b in map(bad, atom.items) if b), None)
            if isinstance(atom, DictAtom):
                return "a dict"
            if isinstance(atom, Const) and isinstance(atom.value, (tuple, list)):
                return next((b for b in (bad(Const(v)) for v in atom.value) if b), None)
            if isinstance(atom, Const) and not (literals.is_literal(atom.value)
                                                or literals.is_array_like(atom.value)):
                refusal = getattr(atom.value, "__s2sgrad_not_a_value__", None)
                hints.extend(refusal[1:] if refusal else ())
                return refusal[0] if refusal else \
                    f"an object of type {type(atom.value).__name__}"
            return None
        what = bad(frame.output) if frame.output is not None else None
        if what is None:
            return
        returns = [n for n in _own_nodes(parsed.node) if isinstance(n, gast.Return)]
        node = returns[-1] if returns else parsed.node
        raise unsupported(frame, node, f"returning {what} from the differentiated "
                          f"function", hints[0] if hints else "return a number, an array, "
                          "or a tuple of them (e.g. return loss, aux with has_aux=True)")

    def argument_atom(self, tree, hint, params):
        """The atom of one argument: a parameter Var for a leaf; for a tuple, list or dict
        (``tree``, see s2sgrad.trees) a Seq or DictAtom of one parameter per leaf, so the
        function's ``p[0]``, ``p['w']`` and ``a, b = p`` resolve while building.  The
        parameters are appended to ``params``."""
        if tree is None:
            name = self.state.names.variable(hint)
            i = len(params)
            params.append(name)
            known = self.arg_types[i] if self.arg_types and i < len(self.arg_types) else None
            if known is not None and isinstance(known[0], str) and known[0] == "const":
                return Const(known[1])   # None, a bool or a string: folded while building
            self.type_parameter(name, i)
            return Var(name)
        kind, children = tree[0], tree[1]
        if kind == "dict":
            return DictAtom([(Const(key), self.argument_atom(child, _leaf_hint(hint, key), params))
                             for key, child in children])
        fields = getattr(tree[2], "_fields", ()) if kind == "namedtuple" else ()
        seq = Seq(tuple(self.argument_atom(child, _leaf_hint(hint, fields[i] if fields else i),
                                           params) for i, child in enumerate(children)),
                  "list" if kind == "list" else "tuple")
        if fields:
            self.state.fields[seq] = fields   # p.w reads the item named w
        return seq

    def type_parameter(self, name, i):
        """Record what ``arg_types`` says of leaf parameter ``i`` (dtype and rank, and which
        dimensions are 1 where it says so)."""
        if self.arg_types is None or i >= len(self.arg_types) or not self.arg_types[i]:
            return
        dtype, ndim = self.arg_types[i][:2]
        self.types.ndims[name] = ndim
        if len(self.arg_types[i]) > 2:
            self.types.shapes.argument(name, ndim, self.arg_types[i][2])
        if self.by_shape and len(self.arg_types[i]) > 3:
            self.types.shapes.of[name] = tuple(self.arg_types[i][3])
        if isinstance(dtype, str) and dtype == "int":   # a Python int argument
            self.types.int_vars.add(name)
        elif dtype is not None:
            self.types.param_types[name] = (dtype, ndim)
            if dtype.kind == "f":
                self.types.dtypes[name] = dtype
