"""Lowering: a parsed function -> straight-line SSA ``Op`` list (ANF), callees inlined.

Takes the root function (or a Cell's construct) and gives a
``LoweredFunction``: one primitive operation per ``Op``, every operand an
atom, every name resolved.  On the way it

- inlines calls to the user's own functions, to bound methods, to s2sgrad
  ops (their raw numpy body) and to Cells (their ``construct``), so that
  only primitives with rules remain;
- folds what is known while building: ``if`` on a Cell attribute or on an
  option string, ``for`` over a Cell's fixed children, tuple indexing and
  unpacking, arithmetic on constants;
- turns arrays read from globals, closures and Cell attributes into extra
  arguments of the generated function (``FreeValue``), so the generated
  code never holds data;
- raises ``UnsupportedConstructError`` naming the user's line for anything
  else.
"""
import copy
import inspect
import math
import operator

import gast
import numpy as np

from ..dtype import dtype_to_numpy
from ..errors import UnsupportedConstructError, UserCodeError
from ..rules import lookup
from . import literals
from .emit import to_source
from .forward import forward_expression
from .index_tricks import is_index_trick, lower_index_trick
from .frontend import MISSING, is_user_code, parse_function
from .ir import (Const, FreeValue, LoweredFunction, Op, Seq, SetItem,
                 Var)
from .jumps import (comprehension_as_loop, expand_loop_else, lift_loop_returns,
                    remove_early_returns)
from .lower_flow import FlowLowering, _is_append, _unused
from .messages import expression_name, statement_name
from .typeinfo import INTEGER_OPS, TypeInfo, _basic_index, _makes_view
from .naming import NameAllocator

BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
          gast.Div: operator.truediv, gast.Pow: operator.pow, gast.MatMult: operator.matmul,
          gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod, gast.BitAnd: operator.and_,
          gast.BitOr: operator.or_, gast.BitXor: operator.xor}
UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_,
            gast.Invert: operator.invert}
CMPOPS = {gast.Lt: operator.lt, gast.LtE: operator.le, gast.Gt: operator.gt,
          gast.GtE: operator.ge, gast.Eq: operator.eq, gast.NotEq: operator.ne,
          gast.Is: operator.is_, gast.IsNot: operator.is_not, gast.In: operator.contains,
          gast.NotIn: "not_in"}

#: array methods and the numpy function whose rule differentiates them
METHODS = {name: getattr(np, name) for name in (
    "sum", "mean", "max", "min", "prod", "var", "std", "cumsum", "argmax", "argmin",
    "transpose", "reshape", "squeeze", "ravel", "dot", "clip", "copy", "round", "any", "all",
    "nonzero", "argsort", "trace", "swapaxes", "cumprod", "diagonal", "repeat")}
METHODS["flatten"] = np.ravel
METHODS["astype"] = "astype"
#: methods whose several positional arguments numpy's function takes as one tuple
SHAPE_METHODS = {"reshape", "transpose"}
#: attributes of arrays: the ones that carry no gradient, and .T
ARRAY_ATTRIBUTES = ("shape", "ndim", "size", "dtype", "itemsize", "nbytes")

#: a dict's views, known while building: (key, value) atom pairs -> a Seq
DICT_VIEWS = {"keys": lambda pairs: Seq(tuple(k for k, _ in pairs)),
              "values": lambda pairs: Seq(tuple(v for _, v in pairs)),
              "items": lambda pairs: Seq(tuple(Seq((k, v)) for k, v in pairs))}

#: calls folded while building when every argument is a plain constant
FOLDABLE = {len, int, float, bool, abs, min, max, round, isinstance, tuple, str, range,
            math.sqrt, math.exp, math.log, getattr, hasattr, type, dtype_to_numpy, np.dtype,
            np.issubdtype}


def _return_names(taken):
    """The flag and a maker of per-loop result names for ``lift_loop_returns``."""
    taken = set(taken)
    flag = _unused("returned", taken)
    taken.add(flag)

    def values():
        name = _unused("result", taken)
        taken.add(name)
        return name
    return flag, values


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

    def location(self, node):
        """Where an op made from ``node`` comes from, as the user would name it."""
        return self.call_site or self.parsed.location(node)


class Lowerer(FlowLowering, TypeInfo):
    """Lowers one root function and everything it calls into one LoweredFunction."""

    def __init__(self, arg_types=None, arg_trees=None):
        self.arg_types = arg_types    # per leaf parameter: (dtype, ndim), ("const", v) or None
        self.arg_trees = arg_trees    # per argument: its treedef (s2sgrad.trees), None = leaf
        self.known = {}         # Var name -> (dtype, ndim) of arguments, known while building
        self.ndims = {}         # Var name -> rank, where it is known while building
        self.dtypes = {}        # Var name -> float dtype, where it is known while building
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
        self.views = {}         # Var name -> the array variable it may be a view of
        self.stale_views = set()  # views of arrays updated in place since they were taken
        self.fields = {}          # Seq of a namedtuple argument -> its field names
        self.producers = {}       # Var name -> the primitive of the Op that assigned it

    # ------------------------------------------------------------ entry

    def lower(self, fn, bound_self=None):
        """Lower ``fn`` (a function; ``bound_self`` when it is a method such as construct)."""
        parsed = parse_function(fn)
        self.names.claim_source(parsed.node)
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
            self.paths[id(bound_self)] = ""
        arg_leaves, atoms = [], []
        for i, node in enumerate(arg_nodes + list(args.kwonlyargs)):
            tree = self.arg_trees[i] if self.arg_trees and i < len(self.arg_trees) else None
            first = len(params)
            env[node.id] = self.argument_atom(tree, node.id, params)
            atoms.append(env[node.id])
            arg_leaves.append(list(range(first, len(params))))
        frame = Frame(parsed, env)
        if bound_self is not None and getattr(type(bound_self), "bprop", None) is not None \
                and fn is getattr(type(bound_self), "construct", None):
            # a Cell with its own backward, differentiated as a whole
            frame.output = self.cell_call(frame, parsed.node, bound_self, tuple(atoms), {},
                                          None)
        else:
            self.stack.append(parsed.fn)
            self.lower_body(frame, self.function_body(frame, parsed))
            self.stack.pop()
        self.check_output(frame, parsed)
        result = LoweredFunction(parsed.name, parsed.location(parsed.node), params,
                                 list(self.free.values()), self.ops,
                                 frame.output if frame.output is not None else Const(None))
        result.parsed = parsed
        result.arg_leaves = arg_leaves
        result.ndims = self.ndims
        result.int_vars = self.int_vars
        result.dtypes = self.dtypes
        result.known = self.known
        result.mutated = self.mutated
        result.lists = self.lists
        return result

    def check_output(self, frame, parsed):
        """The differentiated function returns numbers, arrays and tuples/lists of them; a
        dict (or a function, or another object) is refused at its return line."""
        from .custom import DictAtom

        def bad(atom):
            if isinstance(atom, Seq):
                return next((b for b in map(bad, atom.items) if b), None)
            if isinstance(atom, DictAtom):
                return "a dict"
            if isinstance(atom, Const) and isinstance(atom.value, (tuple, list)):
                return next((b for b in (bad(Const(v)) for v in atom.value) if b), None)
            if isinstance(atom, Const) and not (literals.is_literal(atom.value)
                                                or literals.is_array_like(atom.value)):
                return f"an object of type {type(atom.value).__name__}"
            return None
        what = bad(frame.output) if frame.output is not None else None
        if what is None:
            return
        returns = [n for n in _own_nodes(parsed.node) if isinstance(n, gast.Return)]
        node = returns[-1] if returns else parsed.node
        raise self.unsupported(frame, node, f"returning {what} from the differentiated "
                               f"function", "return a number, an array, or a tuple of them "
                               "(e.g. return loss, aux with has_aux=True)")

    def argument_atom(self, tree, hint, params):
        """The atom of one argument: a parameter Var for a leaf; for a tuple, list or dict
        (``tree``, see s2sgrad.trees) a Seq or DictAtom of one parameter per leaf, so the
        function's ``p[0]``, ``p['w']`` and ``a, b = p`` resolve while building.  The
        parameters are appended to ``params``."""
        if tree is None:
            name = self.names.variable(hint)
            i = len(params)
            params.append(name)
            known = self.arg_types[i] if self.arg_types and i < len(self.arg_types) else None
            if known is not None and isinstance(known[0], str) and known[0] == "const":
                return Const(known[1])   # None, a bool or a string: folded while building
            self.type_parameter(name, i)
            return Var(name)
        kind, children = tree[0], tree[1]
        if kind == "dict":
            from .custom import DictAtom
            return DictAtom([(Const(key), self.argument_atom(child, _leaf_hint(hint, key), params))
                             for key, child in children])
        fields = getattr(tree[2], "_fields", ()) if kind == "namedtuple" else ()
        seq = Seq(tuple(self.argument_atom(child, _leaf_hint(hint, fields[i] if fields else i),
                                           params) for i, child in enumerate(children)),
                  "list" if kind == "list" else "tuple")
        if fields:
            self.fields[seq] = fields   # p.w reads the item named w
        return seq

    def type_parameter(self, name, i):
        """Record what ``arg_types`` says of leaf parameter ``i`` (dtype and rank)."""
        if self.arg_types is None or i >= len(self.arg_types) or not self.arg_types[i]:
            return
        dtype, ndim = self.arg_types[i]
        self.ndims[name] = ndim
        if isinstance(dtype, str) and dtype == "int":   # a Python int argument
            self.int_vars.add(name)
        elif dtype is not None:
            self.known[name] = (dtype, ndim)
            if dtype.kind == "f":
                self.dtypes[name] = dtype

    # ------------------------------------------------------------ statements

    def function_body(self, frame, parsed):
        """A function's statements with early returns made structured (see jumps.py)."""
        taken = {n.id for n in gast.walk(parsed.node) if isinstance(n, gast.Name)}
        return remove_early_returns(lift_loop_returns(parsed.node.body, *_return_names(taken)))

    def lower_body(self, frame, statements):
        for stmt in statements:
            if frame.returned:
                raise self.unsupported(frame, stmt, "code after return",
                                       "remove the unreachable statements")
            self.lower_statement(frame, stmt)

    def lower_statement(self, frame, stmt):
        """Lower one statement; an error raised without a place (deep in a helper) gets
        this statement's file, line and text."""
        try:
            self._lower_statement(frame, stmt)
        except UserCodeError as exc:
            if exc.location is not None:
                raise
            raise type(exc)(exc.what, frame.location(stmt),
                            exc.construct or _source_segment(frame, stmt), exc.hint) from None

    def _lower_statement(self, frame, stmt):
        if isinstance(stmt, gast.Assign):
            hint = stmt.targets[0].id if (len(stmt.targets) == 1 and
                                          isinstance(stmt.targets[0], gast.Name)) else None
            value = self.lower_expr(frame, stmt.value, hint)
            for target in stmt.targets:
                self.bind(frame, target, value)
        elif isinstance(stmt, gast.AnnAssign) and stmt.value is not None:
            self.bind(frame, stmt.target, self.lower_expr(frame, stmt.value, _name_of(stmt.target)))
        elif isinstance(stmt, gast.AugAssign):
            if not isinstance(stmt.target, (gast.Name, gast.Subscript)):
                raise self.unsupported(frame, stmt, "augmented assignment to an attribute",
                                       "assign to a local variable")
            load = copy.deepcopy(stmt.target)
            for node in gast.walk(load):
                if hasattr(node, "ctx"):
                    node.ctx = gast.Load()
            binop = gast.BinOp(left=load, op=stmt.op, right=stmt.value)
            gast.copy_location(binop, stmt)
            gast.copy_location(load, stmt)
            self.bind(frame, stmt.target, self.lower_expr(frame, binop, _name_of(stmt.target)))
        elif isinstance(stmt, gast.Return):
            frame.output = self.lower_expr(frame, stmt.value) if stmt.value is not None else Const(None)
            frame.returned = True
        elif isinstance(stmt, gast.If):
            test = self.lower_expr(frame, stmt.test)
            if isinstance(test, Const):
                self.lower_body(frame, stmt.body if test.value else stmt.orelse)
            else:
                self.lower_if(frame, stmt, test)
        elif isinstance(stmt, (gast.For, gast.While)) and stmt.orelse:
            taken = {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name)} | set(frame.env)
            self.lower_body(frame, expand_loop_else(stmt, _unused("broke", taken)))
        elif isinstance(stmt, gast.For):
            self.lower_for(frame, stmt)
        elif isinstance(stmt, gast.While):
            self.lower_loop(frame, stmt, None)
        elif isinstance(stmt, gast.FunctionDef):
            frame.env[stmt.name] = self.local_function(frame, stmt)
        elif isinstance(stmt, gast.Expr):
            if isinstance(stmt.value, gast.Constant):
                return  # a docstring or a bare constant
            if _is_append(stmt.value):
                return self.lower_append(frame, stmt)
            if isinstance(stmt.value, (gast.Yield, gast.YieldFrom, gast.Await)):
                self.lower_expr(frame, stmt.value)   # refused, naming yield/await
            if self.lower_call_statement(frame, stmt):
                return
            if isinstance(stmt.value, gast.Call):
                raise self.unsupported(
                    frame, stmt, "a call whose result is not used (s2sgrad cannot follow what "
                    "a call changes in place)", "assign its result to a name, e.g. "
                    "y = np.sort(x) instead of x.sort(), or remove the line")
            raise self.unsupported(frame, stmt, "an expression whose value is not used",
                                   "assign the value to a name, or remove the line")
        elif isinstance(stmt, (gast.Pass, gast.Assert)):
            return
        else:
            raise self.unsupported(frame, stmt, *statement_name(stmt))

    # ------------------------------------------------------------ control flow

    def bind(self, frame, target, value):
        """Assign the atom ``value`` to a target (a name or a tuple/list of targets)."""
        if isinstance(target, gast.Name):
            frame.env[target.id] = value
        elif isinstance(target, (gast.Tuple, gast.List)):
            n = len(target.elts)
            if any(isinstance(elt, gast.Starred) for elt in target.elts):
                raise self.unsupported(frame, target, "a starred assignment (a, *rest = ...)",
                                       "unpack into one name per item, or index the items")
            if isinstance(value, Seq):
                if len(value.items) != n:
                    raise self.unsupported(frame, target, f"unpacking {len(value.items)} values "
                                           f"into {n} names", f"unpack into {len(value.items)} "
                                           f"names, or index the items you need")
                items = value.items
            elif isinstance(value, Const) and isinstance(value.value, (tuple, list)):
                items = [Const(v) for v in value.value]
            else:
                items = [self.emit_getitem(frame, target, value, Const(i), _name_of(elt))
                         for i, elt in enumerate(target.elts)]
            for elt, item in zip(target.elts, items):
                self.bind(frame, elt, item)
        elif isinstance(target, gast.Starred):
            raise self.unsupported(frame, target, "a starred assignment (a, *rest = ...)",
                                   "unpack into one name per item, or index the items")
        elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            base = frame.env.get(target.value.id)
            if not isinstance(base, Var):
                raise self.unsupported(frame, target, "assignment into something that is not an "
                                       "array of this function", "make an array with "
                                       "np.zeros(...) or x.copy() and assign into it")
            if base.name in self.views:
                raise self.unsupported(
                    frame, target, f"writing into `{target.value.id}`, which may be a view of "
                    f"`{self.views[base.name]}`", "write into the array itself, e.g. "
                    "y[1:3] = ... instead of v = y[1:3]; v[:] = ...")
            index_node, index = self.lower_index(frame, target.slice)
            self.mark_views_stale(base.name)
            self.mutated.add(base.name)
            self.ops.append(SetItem(base.name, index_node, index, value, frame.location(target)))
            self.cse.clear()
        else:
            raise self.unsupported(
                frame, target, "assignment to an attribute or a nested subscript",
                "assign to a local array: a = x.copy(); a[i] = v")

    # ------------------------------------------------------------ expressions

    def lower_expr(self, frame, node, hint=None):
        """Lower an expression; returns its atom. ``hint`` names the value's variable."""
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.unsupported(frame, node, *expression_name(node))
        return method(frame, node, hint)

    def expr_Constant(self, frame, node, hint):
        return Const(node.value)

    def expr_Name(self, frame, node, hint):
        if node.id in frame.env:
            return frame.env[node.id]
        obj, where = frame.parsed.scope.lookup(node.id)
        if obj is MISSING:
            raise self.unsupported(frame, node, f"the name `{node.id}` is not defined",
                                   "define it before building the gradient")
        self.paths.setdefault(id(obj), node.id)
        return self.const_or_free(obj, node.id)

    def expr_ListComp(self, frame, node, hint):
        """A list comprehension is a loop that appends (its variables stay local to it)."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise self.unsupported(frame, node, "a comprehension with several for clauses",
                                   "write it as nested for loops that append to a list")
        key = self.names.fresh(hint or "items")
        local = {n.id for n in gast.walk(node.generators[0].target) if isinstance(n, gast.Name)}
        outer = {n: frame.env[n] for n in local if n in frame.env}
        self.lower_body(frame, comprehension_as_loop(node, key))
        for n in local:
            frame.env.pop(n, None)
        frame.env.update(outer)
        return frame.env.pop(key)

    expr_GeneratorExp = expr_ListComp   # materialised: sum(...) and np.stack(...) read lists

    def expr_Lambda(self, frame, node, hint):
        fdef = gast.FunctionDef(name="lambda", args=node.args,
                                body=[gast.copy_location(gast.Return(value=node.body), node)],
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        return self.local_function(frame, gast.copy_location(fdef, node))

    def local_function(self, frame, node):
        """A def/lambda inside the function: its defaults are evaluated where it is defined."""
        if node.decorator_list:
            raise self.unsupported(frame, node, "a decorated local function",
                                   "define it at module level")
        local = LocalFunction(node, frame)
        local.defaults = [self.lower_expr(frame, d) for d in node.args.defaults]
        return Const(local)

    def expr_Dict(self, frame, node, hint):
        from .custom import DictAtom
        if any(k is None for k in node.keys):
            raise self.unsupported(frame, node, "** in a dict", "write the dict's items out: "
                                   "{'a': x, 'b': y}")
        return DictAtom([(self.lower_expr(frame, k), self.lower_expr(frame, v))
                         for k, v in zip(node.keys, node.values)])

    def expr_Tuple(self, frame, node, hint):
        return Seq(tuple(self.splice(frame, node.elts)), "tuple")

    def expr_List(self, frame, node, hint):
        return Seq(tuple(self.splice(frame, node.elts)), "list")

    def splice(self, frame, elts):
        items = []
        for elt in elts:
            if isinstance(elt, gast.Starred):
                value = self.lower_expr(frame, elt.value)
                if not isinstance(value, Seq):
                    raise self.unsupported(frame, elt, "* on a value whose length is known only "
                                           "at run time", "pass the items one by one")
                items.extend(value.items)
            else:
                items.append(self.lower_expr(frame, elt))
        return items

    def expr_Attribute(self, frame, node, hint):
        base = self.lower_expr(frame, node.value)
        if isinstance(base, Const):
            try:
                obj = getattr(base.value, node.attr)
            except AttributeError:
                raise self.unsupported(frame, node, f"`{node.attr}` is not an attribute of "
                                       f"this {type(base.value).__name__}", "check the spelling, "
                                       "or set the attribute before building the gradient") \
                    from None
            path = _join(self.paths.get(id(base.value), ""), node.attr)
            self.paths.setdefault(id(obj), path)
            return self.const_or_free(obj, path)
        if isinstance(base, Var):
            if base.name in self.known and node.attr in ("dtype", "ndim"):
                dtype, ndim = self.known[base.name]
                return Const(dtype if node.attr == "dtype" else ndim)
            expr = gast.Attribute(value=self.atom_node(base), attr=node.attr, ctx=gast.Load())
            prim = np.transpose if node.attr == "T" else "attr." + node.attr
            return self.emit(frame, node, prim, (base,), {}, expr, hint)
        from .custom import DictAtom
        if isinstance(base, DictAtom):
            raise self.unsupported(frame, node, f"`.{node.attr}` of a dict",
                                   "read a dict with constant keys (p['w']), or loop over "
                                   "p.items(), p.keys() or p.values()")
        if isinstance(base, Seq) and node.attr in self.fields.get(base, ()):
            return base.items[self.fields[base].index(node.attr)]
        raise self.unsupported(frame, node, f"`.{node.attr}` of a tuple or list",
                               "index it first (p[0]) or unpack it (a, b = p)")

    def expr_BinOp(self, frame, node, hint):
        left = self.lower_expr(frame, node.left)
        right = self.lower_expr(frame, node.right)
        prim = BINOPS[type(node.op)]
        folded = self.fold(prim, (left, right))
        if folded is not None:
            return folded
        if isinstance(left, Seq) or isinstance(right, Seq):
            if prim is operator.add and isinstance(left, Seq) and isinstance(right, Seq):
                return Seq(left.items + right.items, left.kind)
            # a shape computed at run time plus a fixed tuple is fine; other arithmetic is not
            if not (prim is operator.add and all(isinstance(a, (Seq, Var)) for a in (left, right))):
                raise self.unsupported(frame, node, "arithmetic on a tuple or list",
                                       "use np.array(...) or index the items")
        expr = gast.BinOp(left=self.typed_node(left, right), op=node.op,
                          right=self.typed_node(right, left))
        return self.emit(frame, node, prim, (left, right), {}, expr, hint)

    def expr_UnaryOp(self, frame, node, hint):
        operand = self.lower_expr(frame, node.operand)
        prim = UNARYOPS[type(node.op)]
        folded = self.fold(prim, (operand,))
        if folded is not None:
            return folded
        if prim is operator.pos:
            return operand
        expr = gast.UnaryOp(op=node.op, operand=self.atom_node(operand))
        return self.emit(frame, node, prim, (operand,), {}, expr, hint)

    def expr_Compare(self, frame, node, hint):
        if len(node.ops) != 1:
            # a < b < c  is  (a < b) and (b < c), b evaluated once
            parts, left = [], node.left
            for op, right in zip(node.ops, node.comparators):
                pair = gast.copy_location(gast.Compare(left=left, ops=[op], comparators=[right]),
                                          node)
                parts.append(pair)
                left = right
            return self.lower_expr(frame, gast.copy_location(
                gast.BoolOp(op=gast.And(), values=parts), node), hint)
        left = self.lower_expr(frame, node.left)
        right = self.lower_expr(frame, node.comparators[0])
        prim = CMPOPS[type(node.ops[0])]
        if prim in (operator.contains, "not_in"):
            if isinstance(left, Const) and isinstance(right, Const):
                found = left.value in right.value
                return Const(found if prim is operator.contains else not found)
            raise self.unsupported(frame, node, "`in` on values known only at run time",
                                   "compare explicitly (x == 1.0 or x == 2.0), or use np.isin")
        folded = self.fold(prim, (left, right))
        if folded is not None:
            return folded
        if prim in (operator.is_, operator.is_not) and Const(None) in (left, right):
            # a run-time value is an array or a number, never None
            return Const(prim is operator.is_not)
        expr = gast.Compare(left=self.atom_node(left), ops=node.ops,
                            comparators=[self.atom_node(right)])
        return self.emit(frame, node, prim, (left, right), {}, expr, hint)

    def expr_BoolOp(self, frame, node, hint):
        values = [self.lower_expr(frame, v) for v in node.values]
        if all(isinstance(v, Const) for v in values):
            result = values[0].value
            for v in values[1:]:
                result = (result and v.value) if isinstance(node.op, gast.And) else (result or v.value)
            return Const(result)
        expr = gast.BoolOp(op=node.op, values=[self.atom_node(v) for v in values])
        return self.emit(frame, node, "boolop", tuple(values), {}, expr, hint)

    def expr_IfExp(self, frame, node, hint):
        test = self.lower_expr(frame, node.test)
        if isinstance(test, Const):
            return self.lower_expr(frame, node.body if test.value else node.orelse, hint)
        key = self.names.fresh(hint or "choice")
        branches = []
        for value in (node.body, node.orelse):
            assign = gast.Assign(targets=[gast.Name(id=key, ctx=gast.Store(), annotation=None,
                                                    type_comment=None)],
                                 value=value, type_comment=None)
            branches.append([gast.copy_location(assign, node)])
        stmt = gast.copy_location(gast.If(test=node.test, body=branches[0], orelse=branches[1]),
                                  node)
        self.lower_if(frame, stmt, test)
        return frame.env.pop(key)

    def expr_Subscript(self, frame, node, hint):
        base = self.lower_expr(frame, node.value)
        index_node, index = self.lower_index(frame, node.slice)
        from .custom import DictAtom
        if isinstance(base, DictAtom):
            for key, value in base.pairs:
                if isinstance(key, Const) and isinstance(index, Const) and \
                        key.value == index.value:
                    return value
            raise self.unsupported(frame, node, "a dict read with a key that is not one of its "
                                   "constant keys", "index the dict with one of its keys, "
                                   "written as a constant (d['w'])")
        if isinstance(base, Const) and is_index_trick(base.value) and not isinstance(index, Const):
            return lower_index_trick(self, frame, node, base.value, index, hint)   # np.r_[x, y]
        if isinstance(base, (Seq, Const)) and isinstance(index, Const):
            seq = base.items if isinstance(base, Seq) else base.value
            try:
                item = seq[index.value]
            except (IndexError, KeyError, TypeError) as exc:
                size = f" of {len(seq)} items" if hasattr(seq, "__len__") else ""
                raise self.unsupported(frame, node, f"the index {index.value!r} does not fit "
                                       f"this {type(seq).__name__}{size} ({exc})",
                                       "index within its items") from None
            if isinstance(base, Seq):
                return Seq(tuple(item), base.kind) if isinstance(index.value, slice) else item
            return self.const_or_free(item, _join(self.paths.get(id(base.value), ""), "item"))
        if isinstance(base, Seq):
            kind = "list" if base.kind == "list" else "tuple"
            raise self.unsupported(frame, node, f"indexing a {kind} with an index known only at "
                                   f"run time", "use np.stack(...) to make an array of the "
                                   "items and index that")
        if isinstance(base, Const):
            base = self.const_or_free(base.value, "const")
            if isinstance(base, Const):
                raise self.unsupported(frame, node, "indexing a constant with a run-time index",
                                       "make the constant an array")
        expr = gast.Subscript(value=self.atom_node(base), slice=index_node, ctx=gast.Load())
        return self.emit(frame, node, "getitem", (base, index), {}, expr, hint)

    def lower_index(self, frame, node):
        """An index expression -> (gast node with atoms, atom). Slices become Const slices
        when their parts are constants."""
        if isinstance(node, gast.Slice):
            parts = [self.lower_expr(frame, p) if p is not None else Const(None)
                     for p in (node.lower, node.upper, node.step)]
            rebuilt = gast.Slice(*[None if (isinstance(p, Const) and p.value is None)
                                   else self.atom_node(p) for p in parts])
            if all(isinstance(p, Const) for p in parts):
                return rebuilt, Const(slice(*[p.value for p in parts]))
            return rebuilt, Seq(tuple(parts), "slice")
        if isinstance(node, gast.Tuple):
            pairs = [self.lower_index(frame, e) for e in node.elts]
            rebuilt = gast.Tuple(elts=[p[0] for p in pairs], ctx=gast.Load())
            atoms = [p[1] for p in pairs]
            if all(isinstance(a, Const) for a in atoms):
                return rebuilt, Const(tuple(a.value for a in atoms))
            return rebuilt, Seq(tuple(atoms), "index")
        atom = self.lower_expr(frame, node)
        return self.atom_node(atom), atom

    def expr_Call(self, frame, node, hint):
        if any(k.arg is None for k in node.keywords):
            raise self.unsupported(frame, node, "**kwargs in a call", "pass each keyword by "
                                   "name: f(x, axis=0)")
        # a method call on a run-time value: x.sum(axis=0)
        if isinstance(node.func, gast.Attribute):
            receiver = self.lower_expr(frame, node.func.value)
            if isinstance(receiver, Var):
                return self.method_call(frame, node, receiver, hint)
            from .custom import DictAtom
            if isinstance(receiver, DictAtom) and node.func.attr in DICT_VIEWS and \
                    not node.args and not node.keywords:
                return DICT_VIEWS[node.func.attr](receiver.pairs)
        func = self.lower_expr(frame, node.func)
        args = tuple(self.splice(frame, node.args))
        kwargs = {k.arg: self.lower_expr(frame, k.value) for k in node.keywords}
        if not isinstance(func, Const):
            raise self.unsupported(frame, node, "a call of a value computed at run time",
                                   "call functions by their names (a function chosen at run "
                                   "time cannot be differentiated)")
        return self.call_object(frame, node, func.value, args, kwargs, hint)

    def method_call(self, frame, node, receiver, hint):
        name = node.func.attr
        args = tuple(self.splice(frame, node.args))
        kwargs = {k.arg: self.lower_expr(frame, k.value) for k in node.keywords}
        if name == "asnumpy" and not args:
            return receiver
        expr = self.call_expr(gast.Attribute(value=self.atom_node(receiver), attr=name,
                                             ctx=gast.Load()), args, kwargs)
        prim = METHODS.get(name, "method." + name)
        if name in SHAPE_METHODS and len(args) > 1:
            args = (Seq(tuple(args)),)
        if name == "astype" and args and isinstance(args[0], Const):
            expr.args[0] = literals.literal_node(literals.as_numpy_dtype(args[0].value))
        expr = forward_expression(prim, (receiver,) + args, kwargs, self.atom_node) or expr
        return self.emit(frame, node, prim, (receiver,) + args, kwargs, expr, hint)

    def call_object(self, frame, node, obj, args, kwargs, hint):
        from ..ops import stop_gradient  # the model layer is imported lazily: it imports us
        if obj is stop_gradient:
            return self.stop_gradient(frame, node, args, hint)
        if (obj in FOLDABLE or isinstance(obj, type) and obj in (slice,)) and \
                all(isinstance(a, Const) for a in list(args) + list(kwargs.values())):
            try:
                return Const(obj(*[a.value for a in args], **{k: v.value for k, v in kwargs.items()}))
            except Exception:  # noqa: BLE001 - fall through to a run-time call
                pass
        if obj is len and len(args) == 1 and isinstance(args[0], Seq):
            return Const(len(args[0].items))
        from .custom import DictAtom
        if obj is len and len(args) == 1 and isinstance(args[0], DictAtom):
            return Const(len(args[0].pairs))
        if obj in (max, min) and not kwargs and (len(args) > 2 or len(args) == 1 and isinstance(
                args[0], Seq) and len(args[0].items) > 1):
            # max(a, b, c) and max([a, b, c]) are max(max(a, b), c): the two-argument rule
            items = args if len(args) > 2 else args[0].items
            value = items[0]
            for item in items[1:]:
                value = self.call_object(frame, node, obj, (value, item), {}, None)
            return value
        if isinstance(obj, LocalFunction):
            return self.inline_local(frame, node, obj, args, kwargs)
        custom = getattr(obj, "__s2sgrad_custom_vjp__", None)
        if custom is not None:
            from .custom import lower_custom_call
            return lower_custom_call(self, frame, node, custom.forward, custom.backward, args,
                                     kwargs, hint, name=custom.__name__)
        if getattr(obj, "__s2sgrad_opaque__", False):
            expr = self.call_expr(literals.reference_node(obj, self), args, kwargs)
            return self.emit(frame, node, "opaque", args, kwargs, expr, hint)
        rule = lookup(obj)
        if rule is not None or _is_library_function(obj):
            kwargs = _without_defaults(obj, kwargs)
            args, kwargs = self.scalar_lists_as_arrays(frame, node, obj, rule, args, kwargs)
            expr = forward_expression(obj, args, kwargs, self.atom_node) or \
                self.call_expr(literals.reference_node(obj, self), args, kwargs)
            return self.emit(frame, node, obj, args, kwargs, expr, hint)
        raw = getattr(obj, "raw", None)
        if getattr(obj, "__s2sgrad_op__", False) and raw is not None:
            from ..ops._primitive import rename_aliases
            kwargs = rename_aliases(obj.__name__, getattr(obj, "aliases", None), kwargs)
            return self.inline(frame, node, raw, args, kwargs, None)
        from ..nn import Cell
        if isinstance(obj, Cell):
            return self.cell_call(frame, node, obj, args, kwargs, hint)
        if inspect.ismethod(obj) and inspect.isfunction(obj.__func__):
            return self.inline(frame, node, obj.__func__, args, kwargs, obj.__self__)
        if inspect.isfunction(obj) and is_user_code(obj):
            return self.inline(frame, node, obj, args, kwargs, None)
        construct = getattr(type(obj), "construct", None)
        if inspect.isfunction(construct):   # a primitive object such as Dropout2D
            return self.inline(frame, node, construct, args, kwargs, obj)
        expr = self.call_expr(literals.reference_node(obj, self), args, kwargs)
        return self.emit(frame, node, obj, args, kwargs, expr, hint)

    def scalar_lists_as_arrays(self, frame, node, prim, rule, args, kwargs):
        """``np.max([x, y])``: a list or tuple of numbers given where a numpy rule
        differentiates an array becomes ``np.array([x, y])`` first (what numpy does with
        it), so the rule's adjoint reads an array and ``np.array``'s rule hands each number
        its part.  Gives the (args, kwargs) to call ``prim`` with."""
        if rule is None or not rule.differentiable or not _is_library_function(prim) or \
                prim in (np.array, np.asarray):
            return args, kwargs
        try:
            bound = rule.signature.bind(*args, **kwargs).arguments
        except TypeError:
            return args, kwargs
        params = rule.signature.parameters
        arrays = {}
        for pname in sorted(rule.diff_params):
            value = bound.get(pname)
            if params[pname].kind is not inspect.Parameter.VAR_POSITIONAL and \
                    self._list_of_numbers(value):
                expr = self.call_expr(literals.reference_node(np.array, self), (value,), {})
                arrays[id(value)] = self.emit(frame, node, np.array, (value,), {}, expr, None)
        if not arrays:
            return args, kwargs
        return (tuple(arrays.get(id(a), a) for a in args),
                {k: arrays.get(id(v), v) for k, v in kwargs.items()})

    def _list_of_numbers(self, atom):
        """True for a (nested) tuple or list whose items are all numbers, some of them
        float variables of this function."""
        def leaves(a):
            if isinstance(a, Seq):
                return None if a.kind not in ("tuple", "list") else [
                    x for item in a.items for x in (leaves(item) or [None])]
            return [a]
        if not isinstance(atom, Seq):
            return False
        items = leaves(atom)
        if not items or any(x is None for x in items):
            return False
        numbers = all(
            isinstance(x, Const) and isinstance(x.value, (int, float, np.number))
            and not isinstance(x.value, bool)
            or isinstance(x, Var) and self.ndims.get(x.name) == 0 for x in items)
        return numbers and any(isinstance(x, Var) and x.name not in self.int_vars
                               for x in items)

    def cell_call(self, frame, node, cell, args, kwargs, hint):
        construct = type(cell).construct
        bprop = getattr(type(cell), "bprop", None)
        if bprop is not None:
            from .custom import lower_custom_call
            return lower_custom_call(self, frame, node, construct, bprop, args, kwargs, hint,
                                     bound_self=cell, name=f"{type(cell).__name__}.bprop",
                                     internal_params=tuple(getattr(cell, "internal_params", ())
                                                           or ()))
        return self.inline(frame, node, construct, args, kwargs, cell)

    def stop_gradient(self, frame, node, args, hint):
        if len(args) != 1:
            value = Seq(tuple(args))
        else:
            value = args[0]
        if isinstance(value, Seq):
            return Seq(tuple(self.stop_gradient(frame, node, (item,), None) for item in value.items),
                       value.kind)
        if isinstance(value, Const):
            return value
        return self.emit(frame, node, "stop_gradient", (value,), {}, self.atom_node(value),
                         hint or value.name + "_stopped")

    def inline_local(self, frame, node, local, args, kwargs):
        """A call to a function defined inside the one being differentiated: its body is
        lowered with the enclosing function's variables as they are at the call."""
        if local.node in self.local_stack:
            raise self.unsupported(frame, node, f"recursion into {local.node.name}",
                                   "write the recursion as a loop")
        params = local.node.args
        if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs:
            raise self.unsupported(frame, node, "a local function with *args, **kwargs or "
                                   "keyword-only parameters", "name its parameters")
        names = [p.id for p in params.args]
        defaults = local.defaults
        values = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names or name in values:
                raise self.unsupported(frame, node, f"a call of {local.node.name} with "
                                       f"argument `{name}`, which it does not take or already "
                                       f"got", f"pass each of its parameters once: "
                                       f"{', '.join(names)}")
            values[name] = value
        for name, default in zip(names[len(names) - len(defaults):], defaults):
            values.setdefault(name, default)
        missing = [n for n in names if n not in values]
        if missing or len(args) > len(names):
            raise self.unsupported(frame, node, f"a call of {local.node.name} with the wrong "
                                   f"number of arguments", f"pass one value per parameter: "
                                   f"{', '.join(names)}")
        callee = Frame(local.frame.parsed, {**local.frame.env, **values}, frame.call_site)
        self.local_stack.append(local.node)
        taken = set(callee.env) | {n.id for n in gast.walk(local.node)
                                   if isinstance(n, gast.Name)}
        body = remove_early_returns(lift_loop_returns(local.node.body, *_return_names(taken)))
        self.lower_body(callee, body)
        self.local_stack.pop()
        return callee.output if callee.output is not None else Const(None)

    def inline(self, frame, node, fn, args, kwargs, bound_self):
        """Lower a call to a Python function by lowering its body with the arguments bound."""
        if fn in self.stack:
            raise self.unsupported(frame, node, f"recursion into {fn.__qualname__}",
                                   "write the recursion as a loop")
        parsed = parse_function(fn)
        self.names.claim_source(parsed.node)
        sig = inspect.signature(fn)
        call_args = ((Const(bound_self),) if bound_self is not None else ()) + tuple(args)
        try:
            bound = sig.bind(*call_args, **kwargs)
        except TypeError as exc:
            raise self.unsupported(frame, node, f"a call that does not match "
                                   f"{fn.__qualname__}{sig} ({exc})", f"call {fn.__qualname__} "
                                   f"with the arguments its signature takes") from None
        bound.apply_defaults()
        env = {}
        for name, value in bound.arguments.items():
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                env[name] = Seq(tuple(value))
            elif kind is inspect.Parameter.VAR_KEYWORD:
                if value:
                    raise self.unsupported(frame, node, "a call that fills **kwargs",
                                           "pass the values as named parameters")
                env[name] = Const({})
            elif isinstance(value, (Var, Const, Seq)):
                env[name] = value
            else:
                env[name] = self.const_or_free(value, name)
        if bound_self is not None:
            self.paths.setdefault(id(bound_self), self.paths.get(id(bound_self), "self"))
        library = (getattr(fn, "__module__", "") or "").startswith("s2sgrad.")
        callee = Frame(parsed, env, frame.location(node) if library else None)
        self.stack.append(fn)
        self.lower_body(callee, self.function_body(callee, parsed))
        self.stack.pop()
        return callee.output if callee.output is not None else Const(None)

    # ------------------------------------------------------------ helpers

    def emit(self, frame, node, prim, args, kwargs, expr, hint, custom=None):
        """Append an Op computing ``expr``; returns the Var it assigns."""
        stale = [a.name for a in args if isinstance(a, Var) and a.name in self.stale_views]
        if stale:
            raise self.unsupported(
                frame, node, f"`{stale[0]}` is a view of an array that was updated in place "
                f"after the view was taken", "take a copy (.copy()) before the update, or read "
                "the array itself after it")
        rule = lookup(prim) if custom is None else None
        if custom is None and _integer_result(prim, args, kwargs):
            rule = lookup("integer_dtype")   # piecewise constant: it carries no gradient
        key = _cse_key(prim, args, kwargs) if rule is not None and custom is None else None
        if key is not None and key in self.cse:
            return self.cse[key]      # the same pure operation on the same values: reuse it
        name = self.names.variable(hint) if hint else self.names.temp()
        bind_error = None
        if rule is not None and rule.differentiable:
            try:
                rule.bind(args, kwargs)
            except TypeError as exc:   # a form of the call the rule does not cover
                rule, bind_error = None, f"s2sgrad's rule takes {rule.signature}: {exc}"
        self.ops.append(Op((name,), prim, tuple(args), dict(kwargs), expr,
                           frame.location(node), rule, custom))
        self.producers[name] = prim
        self.ops[-1].bind_error = bind_error
        if rule is not None and rule.tuple_result:
            self.lists.add(name)   # read by index like a list; its adjoint is a list
        if _makes_view(prim, args) and isinstance(args[0], Var):
            self.views[name] = self.views.get(args[0].name, args[0].name)
        ndim = self.infer_ndim(prim, args, kwargs)
        if ndim is not None:
            self.ndims[name] = ndim
        dtype = self.infer_dtype(prim, args, kwargs)
        if dtype is not None:
            self.dtypes[name] = dtype
        if prim in INTEGER_OPS and all(self.is_int(a) for a in args):
            self.int_vars.add(name)
            self.ndims[name] = 0
        if key is not None and (self.ndims.get(name) == 0 or name in self.int_vars):
            self.cse[key] = Var(name)   # scalars only: an array result could be updated in place
        if prim == "getitem":
            base, index = args
            self.ops[-1].basic_index = _basic_index(index, self.int_vars)
            self.ops[-1].list_base = isinstance(base, Var) and base.name in self.lists
        return Var(name)

    def emit_getitem(self, frame, node, value, index, hint):
        expr = gast.Subscript(value=self.atom_node(value), slice=self.atom_node(index),
                              ctx=gast.Load())
        return self.emit(frame, node, "getitem", (value, index), {}, expr, hint)

    def fold(self, prim, atoms):
        """The constant result of ``prim`` on constant operands, or None."""
        if not all(isinstance(a, Const) for a in atoms):
            return None
        values = [a.value for a in atoms]
        if any(isinstance(v, np.ndarray) for v in values):
            return None
        try:
            return Const(prim(*values))
        except Exception:  # noqa: BLE001 - leave it to run time
            return None

    def const_or_free(self, obj, path):
        """An atom for an object read from outside: arrays and Tensors become free
        arguments (Vars); everything else is a Const."""
        if literals.is_array_like(obj):
            key = id(obj)
            if key not in self.free:
                label = getattr(obj, "name", None)   # a Parameter's dotted name, if it has one
                label = label if isinstance(label, str) and "#" not in label else path
                name = self.names.variable(_identifier(label))
                self.free[key] = FreeValue(name, obj, path)
                data = np.asarray(obj)
                self.known[name] = (data.dtype, data.ndim)
                self.ndims[name] = data.ndim
                if data.dtype.kind == "f":
                    self.dtypes[name] = data.dtype
                self.free_objects.append(obj)
            self.names.claim(self.free[key].name)   # kept across a discarded reverse attempt
            return Var(self.free[key].name)
        return Const(obj)

    def call_expr(self, func, args, kwargs):
        """``func(*args, **kwargs)`` as a gast Call on atoms."""
        return gast.Call(func=func, args=[self.atom_node(a) for a in args],
                         keywords=[gast.keyword(arg=k, value=self.atom_node(v))
                                   for k, v in kwargs.items()])

    def atom_node(self, atom):
        """The gast expression that reads an atom in generated code."""
        from .custom import DictAtom
        if isinstance(atom, DictAtom):
            raise UnsupportedConstructError(
                "a dict used as a whole value (s2sgrad reads dicts by constant keys only)",
                None, None, "read its items with constant keys (d['w']) and pass or return "
                "those")
        if isinstance(atom, Var):
            return gast.Name(id=atom.name, ctx=gast.Load(), annotation=None, type_comment=None)
        if isinstance(atom, Seq):
            if atom.kind == "slice":
                return gast.Call(func=gast.Name(id="slice", ctx=gast.Load(), annotation=None,
                                                type_comment=None),
                                 args=[self.atom_node(a) for a in atom.items], keywords=[])
            nodes = [self.atom_node(a) for a in atom.items]
            if atom.kind == "list":
                return gast.List(elts=nodes, ctx=gast.Load())
            return gast.Tuple(elts=nodes, ctx=gast.Load())
        return literals.literal_node(atom.value, self)

    def unsupported(self, frame, node, what, hint):
        return UnsupportedConstructError(what, frame.parsed.location(node),
                                         _source_segment(frame, node), hint)


#: primitives never reused: effects, run-time objects, fresh containers
NOT_REUSED = {"effect", "opaque", "list", "copy"}


def _cse_key(prim, args, kwargs):
    """A key that identifies a pure operation on the same values, or None."""
    if isinstance(prim, str) and prim in NOT_REUSED:
        return None
    try:
        key = (prim if isinstance(prim, str) else id(prim),
               tuple(_atom_key(a) for a in args),
               tuple(sorted((k, _atom_key(v)) for k, v in kwargs.items())))
        hash(key)
        return key
    except TypeError:
        return None


def _atom_key(atom):
    if isinstance(atom, Var):
        return ("v", atom.name)
    if isinstance(atom, Seq):
        return ("s", atom.kind, tuple(_atom_key(a) for a in atom.items))
    if isinstance(atom, Const):
        value = atom.value
        if literals.is_literal(value) and not isinstance(value, float) or isinstance(
                value, float) and value == value:
            return ("c", type(value).__name__, value)
        return ("o", id(value))
    raise TypeError(atom)


def _integer_result(prim, args, kwargs):
    """True for a conversion to an integer or boolean dtype known while building:
    ``x.astype(int)``, ``np.array(v, dtype=np.int32)``, ``np.sum(x, dtype=int)``."""
    dtype = args[1] if prim == "astype" and len(args) > 1 else kwargs.get("dtype")
    if not isinstance(dtype, Const) or dtype.value is None:
        return False
    try:
        return np.dtype(literals.as_numpy_dtype(dtype.value)).kind in "biu"
    except TypeError:
        return False


def _without_defaults(fn, kwargs):
    """Drop keyword operands that repeat the callee's default (``axis=None``): shorter code."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return kwargs
    def is_default(k, v):
        if k not in params or not isinstance(v, Const) or not literals.is_literal(v.value):
            return False
        default = params[k].default
        if default is np._NoValue:  # numpy's "not given": keepdims=False, initial=None...
            return v.value is False or v.value is None
        return type(v.value) is type(default) and v.value == default
    return {k: v for k, v in kwargs.items() if not is_default(k, v)}


def _is_library_function(obj):
    """numpy and math callables: primitives even without a rule (an error only if active)."""
    if isinstance(obj, np.ufunc):
        return True
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in ("numpy", "math") or obj is math


def _source_segment(frame, node):
    """The construct's own text (its first line), for messages; None if it has none."""
    try:
        text = to_source(node)
    except Exception:  # noqa: BLE001 - a message detail only
        return None
    return text.splitlines()[0] if text else None


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


def _name_of(node):
    return node.id if isinstance(node, gast.Name) else None


def _join(base, attr):
    return f"{base}.{attr}" if base else attr


def _identifier(path):
    name = "".join(c if c.isalnum() else "_" for c in path).strip("_") or "value"
    if name.startswith("self_"):
        name = name[5:]
    return name if not name[0].isdigit() else "v" + name
