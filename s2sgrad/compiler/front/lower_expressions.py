"""Lowering expressions (``ExpressionLowering``): names, constants, containers,
operators, comparisons, attributes, subscripts and method calls -> atoms (Ops appended
for what runs).  Calls and lambdas go to ``lower_calls``, comprehensions to the
statement lowerer (a loop that appends), ``x if c else y`` on a run-time ``c`` to
``lower_branches``."""
import operator

import gast
import numpy as np

from ... import primitives as prims
from ..ir import Const, DictAtom, Seq, Var
from ..syntax.nodes import name_node
from ..syntax.source import to_source, unsupported
from . import literals
from .frontend import MISSING
from .index_tricks import is_index_trick, lower_index_trick
from .jumps import comprehension_as_loop
from .lower_state import join_path
from .messages import expression_name
from .spellings import forward_expression


BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
          gast.Div: operator.truediv, gast.Pow: operator.pow, gast.MatMult: operator.matmul,
          gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod, gast.BitAnd: operator.and_,
          gast.BitOr: operator.or_, gast.BitXor: operator.xor}

UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_,
            gast.Invert: operator.invert}

CMPOPS = {gast.Lt: operator.lt, gast.LtE: operator.le, gast.Gt: operator.gt,
          gast.GtE: operator.ge, gast.Eq: operator.eq, gast.NotEq: operator.ne,
          gast.Is: operator.is_, gast.IsNot: operator.is_not, gast.In: operator.contains,
          gast.NotIn: prims.NOT_IN}

#: array methods and the numpy function whose rule differentiates them
METHODS = {name: getattr(np, name) for name in (
    "sum", "mean", "max", "min", "prod", "var", "std", "cumsum", "argmax", "argmin",
    "transpose", "reshape", "squeeze", "ravel", "dot", "clip", "copy", "round", "any", "all",
    "nonzero", "argsort", "trace", "swapaxes", "cumprod", "diagonal", "repeat")}
METHODS["flatten"] = np.ravel
METHODS["astype"] = prims.ASTYPE
#: methods whose several positional arguments numpy's function takes as one tuple
SHAPE_METHODS = {"reshape", "transpose"}

#: a dict's views, known while building: (key, value) atom pairs -> a Seq
DICT_VIEWS = {"keys": lambda pairs: Seq(tuple(k for k, _ in pairs)),
              "values": lambda pairs: Seq(tuple(v for _, v in pairs)),
              "items": lambda pairs: Seq(tuple(Seq((k, v)) for k, v in pairs))}


class ExpressionLowering:
    """Expressions -> atoms.  Reads and writes ``state`` (``LoweringState``: paths,
    fields, names), reads ``types`` (``TypeInfo``), writes operands with ``atoms`` and
    appends Ops with ``emitter``.  What an expression holds that is not one (a call, a
    comprehension, a run-time ``if``) goes to the lowerers given to ``connect``."""

    def __init__(self, state, types, atoms, emitter):
        self.state = state
        self.types = types
        self.atoms = atoms
        self.emitter = emitter
        self.calls = self.statements = self.branches = None

    def connect(self, calls, statements, branches):
        """The lowerers an expression recurses into: ``calls`` (``CallLowering``),
        ``statements`` (``StatementLowering``: comprehensions), ``branches``
        (``BranchLowering``: ``x if c else y``)."""
        self.calls = calls
        self.statements = statements
        self.branches = branches

    def lower_expr(self, frame, node, hint=None):
        """Lower an expression; returns its atom. ``hint`` names the value's variable."""
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise unsupported(frame, node, *expression_name(node))
        return method(frame, node, hint)

    def expr_Constant(self, frame, node, hint):
        return Const(node.value)

    def expr_Name(self, frame, node, hint):
        if node.id in frame.env:
            return frame.env[node.id]
        obj, where = frame.parsed.scope.lookup(node.id)
        if obj is MISSING:
            raise unsupported(frame, node, f"the name `{node.id}` is not defined",
                              "define it before building the gradient")
        self.state.paths.setdefault(id(obj), node.id)
        inherited = getattr(frame.parsed.fn, "__s2sgrad_guards__", None)
        if inherited is None:
            source = frame.parsed.scope.source(node.id, where)
            self.state.guards.read_name(source, obj)
        else:   # s2sgrad's own function over a derivative: its reads are fixed, and
            source = None   # what the derivative read is checked in their place
            self.state.guards.extend(inherited)
        return self.atoms.const_or_free(obj, node.id, source)

    def expr_ListComp(self, frame, node, hint):
        """A list comprehension is a loop that appends (its variables stay local to it)."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise unsupported(frame, node, "a comprehension with several for clauses",
                              "write it as nested for loops that append to a list")
        key = self.state.names.fresh(hint or "items")
        local = {n.id for n in gast.walk(node.generators[0].target) if isinstance(n, gast.Name)}
        outer = {n: frame.env[n] for n in local if n in frame.env}
        self.statements.lower_body(frame, comprehension_as_loop(node, key))
        for n in local:
            frame.env.pop(n, None)
        frame.env.update(outer)
        return frame.env.pop(key)

    expr_GeneratorExp = expr_ListComp   # materialised: sum(...) and np.stack(...) read lists

    def expr_Dict(self, frame, node, hint):
        if any(k is None for k in node.keys):
            raise unsupported(frame, node, "** in a dict", "write the dict's items out: "
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
                if isinstance(value, Const) and type(value.value) in (tuple, list):
                    # a tuple read from outside (a closure's ``*rest``): its items, the
                    # arrays passed in (the tuple's guard compares them by identity)
                    word = elt.value.id if isinstance(elt.value, gast.Name) else "item"
                    value = Seq(tuple(self.atoms.const_or_free(item, f"{word}_{i}")
                                      for i, item in enumerate(value.value)))
                if not isinstance(value, Seq):
                    raise unsupported(frame, elt, "* on a value whose length is known only "
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
                raise unsupported(frame, node, f"`{node.attr}` is not an attribute of "
                                  f"this {type(base.value).__name__}", "check the spelling, "
                                  "or set the attribute before building the gradient") \
                    from None
            path = join_path(self.state.paths.get(id(base.value), ""), node.attr)
            self.state.paths.setdefault(id(obj), path)
            guard = self.state.guards.read_attribute(base.value, node.attr, obj, path)
            return self.atoms.const_or_free(obj, path, guard and guard.source)
        if isinstance(base, Var):
            if base.name in self.types.param_types and node.attr in ("dtype", "ndim"):
                dtype, ndim = self.types.param_types[base.name]
                return Const(dtype if node.attr == "dtype" else ndim)
            shape = self.types.shapes.constant(self.types.shape_of(base))
            if shape is not None and node.attr in ("shape", "size"):
                return Const(shape if node.attr == "shape" else int(np.prod(shape)))
            expr = gast.Attribute(value=self.atoms.atom_node(base), attr=node.attr, ctx=gast.Load())
            prim = np.transpose if node.attr == "T" else prims.attribute(node.attr)
            return self.emitter.emit(frame, node, prim, (base,), {}, expr, hint)
        if isinstance(base, DictAtom):
            raise unsupported(frame, node, f"`.{node.attr}` of a dict",
                              "read a dict with constant keys (p['w']), or loop over "
                              "p.items(), p.keys() or p.values()")
        if isinstance(base, Seq) and node.attr in self.state.fields.get(base, ()):
            return base.items[self.state.fields[base].index(node.attr)]
        raise unsupported(frame, node, f"`.{node.attr}` of a tuple or list",
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
                raise unsupported(frame, node, "arithmetic on a tuple or list",
                                  "use np.array(...) or index the items")
        expr = gast.BinOp(left=self.typed_node(left, right), op=node.op,
                          right=self.typed_node(right, left))
        return self.emitter.emit(frame, node, prim, (left, right), {}, expr, hint)

    def expr_UnaryOp(self, frame, node, hint):
        operand = self.lower_expr(frame, node.operand)
        prim = UNARYOPS[type(node.op)]
        folded = self.fold(prim, (operand,))
        if folded is not None:
            return folded
        if prim is operator.pos:
            return operand
        expr = gast.UnaryOp(op=node.op, operand=self.atoms.atom_node(operand))
        return self.emitter.emit(frame, node, prim, (operand,), {}, expr, hint)

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
        if prim in (operator.contains, prims.NOT_IN):
            if isinstance(left, Const) and isinstance(right, Const):
                found = left.value in right.value
                return Const(found if prim is operator.contains else not found)
            raise unsupported(frame, node, "`in` on values known only at run time",
                              "compare explicitly (x == 1.0 or x == 2.0), or use np.isin")
        folded = self.fold(prim, (left, right))
        if folded is not None:
            return folded
        if prim in (operator.is_, operator.is_not) and Const(None) in (left, right):
            other = right if left == Const(None) else left
            if isinstance(other, Var) and other.name in self.types.maybe_none:
                name = to_source(node.left if right == Const(None)
                                 else node.comparators[0]).strip()
                raise unsupported(
                    frame, node, f"`{name}` is None before a loop or on one branch and a "
                    f"value after it, and this line tests which: s2sgrad fixes each "
                    f"variable's type when it builds the code, so it cannot follow it "
                    f"changing from None", f"give `{name}` a value of its type from the "
                    f"start (0.0, np.zeros(n)) and keep a separate flag (first = True ... "
                    f"first = False) to test instead")
            # a run-time value is an array or a number, never None
            return Const(prim is operator.is_not)
        expr = gast.Compare(left=self.atoms.atom_node(left), ops=node.ops,
                            comparators=[self.atoms.atom_node(right)])
        return self.emitter.emit(frame, node, prim, (left, right), {}, expr, hint)

    def expr_BoolOp(self, frame, node, hint):
        values = [self.lower_expr(frame, v) for v in node.values]
        if all(isinstance(v, Const) for v in values):
            result = values[0].value
            for v in values[1:]:
                result = (result and v.value) if isinstance(node.op, gast.And) else (result or v.value)
            return Const(result)
        expr = gast.BoolOp(op=node.op, values=[self.atoms.atom_node(v) for v in values])
        return self.emitter.emit(frame, node, prims.BOOLOP, tuple(values), {}, expr, hint)

    def expr_IfExp(self, frame, node, hint):
        test = self.lower_expr(frame, node.test)
        if isinstance(test, Const):
            return self.lower_expr(frame, node.body if test.value else node.orelse, hint)
        key = self.state.names.fresh(hint or "choice")
        branches = []
        for value in (node.body, node.orelse):
            assign = gast.Assign(targets=[name_node(key, gast.Store())],
                                 value=value, type_comment=None)
            branches.append([gast.copy_location(assign, node)])
        stmt = gast.copy_location(gast.If(test=node.test, body=branches[0], orelse=branches[1]),
                                  node)
        self.branches.lower_if(frame, stmt, test)
        return frame.env.pop(key)

    def expr_Subscript(self, frame, node, hint):
        if self.is_row_then_item(frame, node):
            # a[i][j] with i an int reads a[i, j]: one element, not a row per element
            # (whose adjoint would be a row of zeros for every element read)
            outer = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
            node = gast.copy_location(gast.Subscript(value=node.value.value, slice=gast.Tuple(
                elts=[node.value.slice] + list(outer), ctx=gast.Load()), ctx=gast.Load()), node)
        base = self.lower_expr(frame, node.value)
        index_node, index = self.lower_index(frame, node.slice)
        if isinstance(base, DictAtom):
            for key, value in base.pairs:
                if isinstance(key, Const) and isinstance(index, Const) and \
                        key.value == index.value:
                    return value
            raise unsupported(frame, node, "a dict read with a key that is not one of its "
                              "constant keys", "index the dict with one of its keys, "
                              "written as a constant (d['w'])")
        if isinstance(base, Const) and is_index_trick(base.value) and not isinstance(index, Const):
            # np.r_[x, y]
            return lower_index_trick(self.emitter, frame, node, base.value, index, hint)
        if isinstance(base, (Seq, Const)) and isinstance(index, Const):
            seq = base.items if isinstance(base, Seq) else base.value
            try:
                item = seq[index.value]
            except (IndexError, KeyError, TypeError) as exc:
                size = f" of {len(seq)} items" if hasattr(seq, "__len__") else ""
                raise unsupported(frame, node, f"the index {index.value!r} does not fit "
                                  f"this {type(seq).__name__}{size} ({exc})",
                                  "index within its items") from None
            if isinstance(base, Seq):
                return Seq(tuple(item), base.kind) if isinstance(index.value, slice) else item
            path = join_path(self.state.paths.get(id(base.value), ""), "item")
            return self.atoms.const_or_free(item, path)
        if isinstance(base, Seq):
            kind = "list" if base.kind == "list" else "tuple"
            raise unsupported(frame, node, f"indexing a {kind} with an index known only at "
                              f"run time", "use np.stack(...) to make an array of the "
                              "items and index that")
        if isinstance(base, Const):
            base = self.atoms.const_or_free(base.value, "const")
            if isinstance(base, Const):
                raise unsupported(frame, node, "indexing a constant with a run-time index",
                                  "make the constant an array")
        expr = gast.Subscript(value=self.atoms.atom_node(base), slice=index_node, ctx=gast.Load())
        return self.emitter.emit(frame, node, prims.GETITEM, (base, index), {}, expr, hint)

    def lower_index(self, frame, node):
        """An index expression -> (gast node with atoms, atom). Slices become Const slices
        when their parts are constants."""
        if isinstance(node, gast.Slice):
            parts = [self.lower_expr(frame, p) if p is not None else Const(None)
                     for p in (node.lower, node.upper, node.step)]
            rebuilt = gast.Slice(*[None if (isinstance(p, Const) and p.value is None)
                                   else self.atoms.atom_node(p) for p in parts])
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
        return self.atoms.atom_node(atom), atom

    def method_call(self, frame, node, receiver, hint):
        name = node.func.attr
        args = tuple(self.splice(frame, node.args))
        kwargs = {k.arg: self.lower_expr(frame, k.value) for k in node.keywords}
        if name == "asnumpy" and not args:
            return receiver
        expr = self.atoms.call_expr(gast.Attribute(value=self.atoms.atom_node(receiver), attr=name,
                                                   ctx=gast.Load()), args, kwargs)
        prim = METHODS.get(name, prims.method(name))
        if name in SHAPE_METHODS and len(args) > 1:
            args = (Seq(tuple(args)),)
        if name == "astype" and args and isinstance(args[0], Const):
            expr.args[0] = literals.literal_node(literals.as_numpy_dtype(args[0].value))
        expr = forward_expression(prim, (receiver,) + args, kwargs, self.atoms.atom_node) or expr
        return self.emitter.emit(frame, node, prim, (receiver,) + args, kwargs, expr, hint)

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

    def typed_node(self, atom, other):
        """``atom`` in generated code; a Python number next to a float32 (float16) value is
        written as ``np.float32(...)``: Numba would otherwise compute in float64."""
        dtype = self.types.dtypes.get(other.name) if isinstance(other, Var) else None
        if isinstance(atom, Const) and isinstance(atom.value, (int, float)) \
                and not isinstance(atom.value, bool) and dtype is not None \
                and dtype in (np.float32, np.float16):
            return gast.Call(func=gast.Attribute(value=name_node("np"),
                                                 attr=np.dtype(dtype).name, ctx=gast.Load()),
                             args=[gast.Constant(value=float(atom.value), kind=None)],
                             keywords=[])
        return self.atoms.atom_node(atom)

    def is_row_then_item(self, frame, target):
        """True for ``a[i][j]`` (``a`` an array, not a list, ``i`` an int and not a slice:
        ``a[i]`` is then a view of row i, and ``a[i][j]`` is ``a[i, j]``), read or written."""
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Subscript)
                and isinstance(target.value.value, gast.Name)):
            return False
        base = frame.env.get(target.value.value.id)
        if not isinstance(base, Var) or base.name in self.types.lists or \
                not self.types.ndim_of(base):
            return False
        inner = target.value.slice
        if not _plain_index(inner):
            return False
        return self.types.is_int(self.lower_expr(frame, inner))

    def expr_Call(self, frame, node, hint):
        return self.calls.lower_call(frame, node, hint)

    def expr_Lambda(self, frame, node, hint):
        return self.calls.lower_lambda(frame, node, hint)


def _plain_index(node):
    """True for an index made of names, constants and arithmetic on them (``i``, ``i - 1``):
    cheap to lower twice (the second time finds the first's values)."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.BinOp):
        return _plain_index(node.left) and _plain_index(node.right)
    if isinstance(node, gast.UnaryOp):
        return _plain_index(node.operand)
    return False
