"""Lowering a run-time ``if`` (``BranchLowering``): gast ``if`` -> an ``If`` statement.

Both sides are lowered, each into its own Op list; a variable (or the result)
that the sides set differently is merged into a fresh variable by ``assign``
copies at the end of each side (the branches' 'phi' copies).  Values known while
building, objects and dicts must agree on both sides.
"""
from ..ir import Const, DictAtom, If, Seq, Var
from ..syntax.source import unsupported
from . import literals


class BranchLowering:
    """Run-time ``if`` -> ``If``.  Writes ``state.ops`` (a ``LoweringState``), what is
    known of merged variables into ``types`` (``TypeInfo``), and saves and merges the
    stale variables of ``aliases`` (``AliasTracking``) per side; the merge copies come
    from ``emitter``.  The sides are lowered by the statement lowerer given to
    ``connect``."""

    def __init__(self, state, types, aliases, emitter):
        self.state = state
        self.types = types
        self.aliases = aliases
        self.emitter = emitter
        self.statements = None

    def connect(self, statements):
        """The lowerer of each side's statements (``StatementLowering``)."""
        self.statements = statements

    def lower_if(self, frame, stmt, test):
        """A branch on a run-time value: both sides lowered, variables merged by assignments
        at the end of each side (the branches' 'phi' copies)."""
        before = dict(frame.env)
        stale_before, stale_after = set(self.aliases.stale_views), set()
        self.state.stack.branches.append(frame.location(stmt))   # a recursion under it: refused
        try:
            sides = self.lower_sides(frame, stmt, before, stale_before, stale_after)
        finally:
            self.state.stack.branches.pop()
        self.aliases.stale_views = stale_after
        (body, env_body, out_body), (orelse, env_else, out_else) = sides
        frame.env = dict(before)
        location = frame.location(stmt)
        for name in dict.fromkeys(list(env_body) + list(env_else)):
            a, b = env_body.get(name), env_else.get(name)
            if a == b:
                frame.env[name] = a
            else:
                frame.env[name] = self.merge(frame, stmt, name, a, b, body, orelse, location)
        if (out_body is None) != (out_else is None):
            raise unsupported(frame, stmt, "a branch that returns while the other falls "
                              "through", "return from both branches, or from neither")
        if out_body is not None:
            frame.output = self.merge(frame, stmt, "result", out_body, out_else, body, orelse,
                                      location)
            frame.returned = True
        else:
            frame.output, frame.returned = None, False
        self.state.ops.append(If(test, body, orelse, location))
        self.state.cse.clear()

    def lower_sides(self, frame, stmt, before, stale_before, stale_after):
        """Each side of ``stmt`` lowered from the variables ``before`` it: per side (its
        Ops, the variables after it, its result or None); the views either side leaves
        stale are added to ``stale_after``."""
        sides = []
        for statements in (stmt.body, stmt.orelse):
            frame.env = dict(before)
            frame.output, frame.returned = None, False
            self.aliases.stale_views = set(stale_before)   # one side does not run after the other
            ops = self.state.collect(lambda: self.statements.lower_body(frame, statements))
            sides.append((ops, frame.env, frame.output if frame.returned else None))
            stale_after |= self.aliases.stale_views
        return sides

    def merge(self, frame, stmt, name, a, b, body, orelse, location):
        """The atom that holds ``a`` after ``body`` and ``b`` after ``orelse``."""
        if a is None or b is None:
            # set on one path only: on the other, Python has no value for it either
            one = a if b is None else b
            if isinstance(one, Var):
                self.state.unbound.add(one.name)
            return one
        if isinstance(a, DictAtom) or isinstance(b, DictAtom):
            if a is b:
                return a
            raise unsupported(frame, stmt, f"`{name}` is a dict that differs between the "
                              f"two branches", "make the dict before the if and set only "
                              "its values' variables in the branches")
        if isinstance(a, Seq) or isinstance(b, Seq):
            if not (isinstance(a, Seq) and isinstance(b, Seq) and len(a.items) == len(b.items)):
                raise unsupported(frame, stmt, f"`{name}` is a tuple of different lengths "
                                  f"in the two branches", "give it the same structure")
            return Seq(tuple(self.merge(frame, stmt, name, x, y, body, orelse, location)
                             for x, y in zip(a.items, b.items)), a.kind)
        if a == b:
            return a
        for atom in (a, b):
            if isinstance(atom, Const) and not literals.is_literal(atom.value) \
                    and atom.value is not None:
                raise unsupported(frame, stmt, f"`{name}` names different objects in the "
                                  f"two branches", "branch on values, not on functions")
        merged = self.state.names.variable(name if name.isidentifier() else "v")
        if any(atom == Const(None) or isinstance(atom, Var) and
               atom.name in self.types.maybe_none for atom in (a, b)):
            self.types.maybe_none.add(merged)      # None on one path, a value on the other
        if a is not None and b is not None and self.types.ndim_of(a) is not None \
                and self.types.ndim_of(a) == self.types.ndim_of(b):
            self.types.ndims[merged] = self.types.ndim_of(a)
        if a is not None and b is not None and self.types.shapes.same(self.types.shape_of(a),
                                                                      self.types.shape_of(b)):
            self.types.shapes.of[merged] = self.types.shape_of(a)
        for atom, ops in ((a, body), (b, orelse)):
            if atom is not None:
                ops.append(self.emitter.assign_op(merged, atom, location))
        if merged in self.types.ndims and a is not None and b is not None and \
                self.types.ndim_of(a) != self.types.ndim_of(b):
            del self.types.ndims[merged]   # assign_op's rank is one branch's: not known
        return Var(merged)
