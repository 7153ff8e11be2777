"""The table of forward-mode (JVP) rules, keyed by the primitive callable.

A JVP rule is a template, like a VJP rule (``registry.py``): a small Python
function that is never run, only parsed.  Its first parameter names the
primitive's result, the rest are the primitive's own parameters (with the
primitive's defaults, so a call binds to it as to the VJP rule).  ``t[x]`` is
the tangent of parameter ``x``; ``t[ans]`` the tangent of the result.

The result's tangent is a **sum of terms**: each statement ``t[ans] = e`` or
``t[ans] += e`` is one term (write ``=`` for the first and ``+=`` for the
others).  A term must be linear in the tangents it reads.  The forward pass
keeps a term only when one of the tangents it reads is non-zero (a
*symbolic zero*: an operand that does not depend on the differentiated
inputs has no tangent variable and no code), so give each operand its own
term.  A kept term that reads several tangents gets materialised zeros
(``rt.zeros_like(x)``) for the zero ones.  Other assignments are template
temporaries, emitted only when a kept term needs them.  A bare expression
statement is an *effect* on tangents, emitted where a tangent it reads is
non-zero (``rt.push(t[tape], top, t[value])`` for a helper that writes into
its argument); a template of ``pass`` only gives the result a zero tangent.
``t[xs]`` of a ``*xs`` parameter (or of a tuple/list operand) is the tuple of
the items' tangents.  Example::

    @jvp_rule(np.sin)
    def _(ans, x):
        t[ans] = t[x] * np.cos(x)

    @jvp_rule(operator.mul, np.multiply)
    def _(ans, a, b):
        t[ans] = t[a] * b
        t[ans] += a * t[b]

A linear primitive reuses itself: ``t[ans] = np.sum(t[a], axis, keepdims=keepdims)``.
When a term has the shape of an operand that the primitive broadcasts
(``a + b`` with ``a`` of shape (4,) and ``b`` of shape (3, 4)), write
``rt.broadcast_like(t[a], ans)``; the pass drops the call where the result is
a known scalar.  Templates may read ``np``, ``math``, ``rt`` and importable
module-level names of their own module, as VJP templates do.

Three declarations need no template, reading the primitive's signature and
differentiable parameters from its VJP rule: ``jvp_linear(np.sum, ...)`` (the
tangent is the call itself, as the forward code writes it, with operands
replaced by their tangents), ``jvp_multilinear(np.matmul, ...)`` (one such
call per operand with a non-zero tangent: ``a_dot @ b + a @ b_dot``) and
``jvp_reduction(np.median, ...)`` (a reduction over ``axis`` whose VJP template,
with ``d[ans]`` set to ones, gives each input element's partial derivative).

``jvp_lookup(primitive)`` gives the rule of a primitive: the registered one,
else one *derived* from its VJP rule when the primitive is elementwise (a
numpy ufunc, a ``math`` function, an arithmetic operator) and each ``d[x] =
...`` of the VJP template is ``d[ans]`` times (or divided by) a factor,
possibly inside ``rt.unbroadcast(..., x)``: then ``t[ans] += t[x] * factor``
(wrapped in ``rt.broadcast_like`` where the VJP unbroadcasts); or when the
template spreads ``rt.unreduce(d[ans], x, axis, keepdims)`` times a factor (a
reduction): then ``t[ans] += rt.sum(t[x] * factor, axis, keepdims)``.  ``all_jvp_rules()`` lists
the registered rules; ``tests/test_jvp_rules.py`` checks every rule (derived
ones too) against central finite differences.

``jvp_linear_in("g", rt.roll_adjoint, ...)`` does the same for helpers without a VJP rule
(the adjoint helpers of generated gradient code, linear in the incoming adjoint ``g``):
the named parameters' tangents replace them, the others stay as written.

Stable interface (the forward pass and higher-order code build on it):
``t``, ``jvp_rule``, ``jvp_linear``, ``jvp_linear_in``, ``jvp_multilinear``, ``jvp_reduction``,
``jvp_lookup``, ``registered``, ``all_jvp_rules``, ``is_elementwise``, ``JvpRule``.  A callable with
a registered JVP rule (an ``rt`` helper of generated gradient code) is a
primitive of the lowering even without a VJP rule.
"""
import copy
import inspect
import math
import operator
import textwrap

import gast
import numpy as np

from .registry import (display_name, is_adjoint_subscript, lookup, parses_at_registration,
                       template_globals)


class _TangentMarker:
    """The ``t`` in JVP templates: ``t[x]`` marks the tangent of ``x``. Never evaluated."""

    def __getitem__(self, item):  # pragma: no cover - templates are parsed, not run
        raise RuntimeError("rule templates are parsed, never executed")


t = _TangentMarker()


def is_tangent_subscript(node):
    """True for ``t[x]`` in a JVP template: the tangent of the template's name ``x``."""
    return (isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name)
            and node.value.id == "t" and isinstance(node.slice, gast.Name))


def tangents_read(node):
    """The parameter names whose tangent ``node`` reads (``t[x]``), in order, once each."""
    names = []
    for n in gast.walk(node):
        if is_tangent_subscript(n) and n.slice.id not in names:
            names.append(n.slice.id)
    return names


class JvpRule:
    """The forward-mode rule of one primitive.

    ``signature`` binds a call's operands to the template's parameter names (as
    the VJP rule's does); ``result`` is the result parameter's name;
    ``statements`` is a list of ("term", expr), ("local", name, expr) and ("effect",
    expr) in template order; ``tangent_params`` the parameters some term reads the
    tangent of; ``derived`` is True for a rule made from a VJP template;
    ``tuple_result``: the primitive returns a tuple and ``t[ans]`` is a tuple.
    """

    #: "template" (terms), "linear" (the call itself on the tangents) or "multilinear"
    #: (one term per operand: the call with that operand's tangent in its place)
    kind = "template"
    #: the parameters known to carry no derivative (``jvp_linear_in``'s ``constant``);
    #: None: every parameter no term reads (a template states its whole tangent)
    constant_params = None

    def gives_no_tangent_to(self, param):
        """True when a differentiated value reaching ``param`` must be refused: the rule
        neither differentiates it nor declares it constant."""
        if param in self.tangent_params:
            return False
        return self.constant_params is not None and param not in self.constant_params

    def __init__(self, primitive, name, signature, result, statements, globals_,
                 derived=False, tuple_result=False):
        self.primitive = primitive
        self.name = name
        self.signature = signature
        self.result = result
        self.statements = statements
        self.globals = globals_
        self.derived = derived
        self.tuple_result = tuple_result
        read = []
        for item in statements:
            if item[0] in ("term", "effect"):
                read += [p for p in tangents_read(item[1]) if p not in read]
        self.tangent_params = tuple(p for p in signature.parameters if p in read)

    def bind(self, args, kwargs):
        """Map a call's operands to the template's parameter names (defaults filled in);
        raises TypeError when the call does not fit the signature."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def __repr__(self):
        return f"<JvpRule {self.name}{' (derived)' if self.derived else ''}>"


class _WithoutTangents(gast.NodeTransformer):
    """``t[x]`` -> ``x``: what a template reads from outside, without the tangent marker."""

    def visit_Subscript(self, node):
        if is_tangent_subscript(node):
            return gast.Name(id=node.slice.id, ctx=gast.Load(), annotation=None,
                             type_comment=None)
        return self.generic_visit(node)


def _is_result_target(node, result):
    return is_tangent_subscript(node) and node.slice.id == result


def parse_template(template, primitive, tuple_result=False):
    """The JvpRule of ``template`` for ``primitive`` (a TypeError names what is wrong)."""
    src = textwrap.dedent(inspect.getsource(template))
    fdef = gast.parse(src).body[0]
    sig = inspect.signature(template)
    params = list(sig.parameters.values())
    result = params[0].name
    statements = []
    for stmt in fdef.body:
        if isinstance(stmt, gast.Pass) or (isinstance(stmt, gast.Expr)
                                           and isinstance(stmt.value, gast.Constant)):
            continue   # a docstring, or `pass`: a result whose tangent is zero
        if isinstance(stmt, gast.Expr):
            statements.append(("effect", stmt.value))
        if isinstance(stmt, gast.AugAssign) and isinstance(stmt.op, gast.Add) and \
                _is_result_target(stmt.target, result):
            statements.append(("term", stmt.value))
        elif isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                _is_result_target(stmt.targets[0], result):
            statements.append(("term", stmt.value))
        elif isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], gast.Name):
            statements.append(("local", stmt.targets[0].id, stmt.value))
        else:
            raise TypeError(f"JVP template {template.__qualname__}: each statement must be "
                            f"`t[{result}] = ...`, `t[{result}] += ...` or `name = ...`")
    clean = _WithoutTangents().visit(copy.deepcopy(fdef))
    globals_ = template_globals(template, clean, [p.name for p in params])
    return JvpRule(primitive, display_name(primitive), sig.replace(parameters=params[1:]),
                   result, statements, globals_, tuple_result=tuple_result)


_RULES = {}


def _key(obj):
    return obj if isinstance(obj, str) else id(obj)


class _Pending:
    """A rule of s2sgrad's own tables not built yet: ``make()`` builds it (parsing its
    template) on first use."""

    def __init__(self, make):
        self.make = make


def _add(prim, make):
    """Register the rule ``make()`` builds for ``prim``: built now for a rule registered
    after s2sgrad's tables (its mistakes raise here), on first use for theirs."""
    _RULES[_key(prim)] = (prim, make() if parses_at_registration() else _Pending(make))


def _resolved(key):
    prim, rule = _RULES[key]
    if isinstance(rule, _Pending):
        rule = rule.make()
        _RULES[key] = (prim, rule)
    return prim, rule


def jvp_rule(*primitives, tuple_result=False):
    """Register the decorated template as the forward-mode rule of each primitive given
    (see the module doc).  ``tuple_result=True``: the primitive returns a tuple, and the
    template's single term gives the tuple of the items' tangents."""

    def register(template):
        for prim in primitives:
            _add(prim, lambda prim=prim: parse_template(template, prim, tuple_result))
        return template

    return register


def _operand_rule(kind, primitives):
    def make(prim):
        vjp_rule = lookup(prim)
        if vjp_rule is None or not vjp_rule.differentiable:
            raise TypeError(f"jvp_{kind}({display_name(prim)}): the primitive needs a "
                            "differentiable VJP rule (its signature and differentiable "
                            "parameters are read from there); register that first")
        rule = JvpRule(prim, vjp_rule.name, vjp_rule.signature, vjp_rule.result, [], {},
                       tuple_result=vjp_rule.tuple_result)
        rule.kind = kind
        rule.tangent_params = tuple(vjp_rule.diff_params)
        return rule
    for prim in primitives:
        _add(prim, lambda prim=prim: make(prim))


def jvp_linear(*primitives):
    """Declare primitives linear in their differentiable operands (those the VJP rule
    gives adjoints to, taken together): the tangent is the same call, as the forward code
    writes it, with each operand replaced by its tangent (``np.sum(x, axis=1)`` ->
    ``np.sum(x_dot, axis=1)``; zeros for an operand with a zero tangent)."""
    _operand_rule("linear", primitives)


def jvp_multilinear(*primitives):
    """Declare primitives linear in each differentiable operand separately (``a @ b``,
    ``np.einsum``, ``np.outer``): the tangent is a sum with one term per operand with a
    non-zero tangent, the call with that operand replaced by its tangent
    (``a_dot @ b + a @ b_dot``)."""
    _operand_rule("multilinear", primitives)


def jvp_linear_in(params, *helpers, constant=()):
    """Declare helpers (``rt.*`` functions of generated gradient code, which have no VJP
    rule) linear in the parameters named in ``params`` (a name or a tuple of names, taken
    together) and constant in those named in ``constant`` (shapes, axes, masks, indices, a
    sort order: names a helper does not have are ignored): the tangent is the same call
    with the ``params`` operands replaced by their tangents (``rt.roll_adjoint(g, 1,
    None)`` -> ``rt.roll_adjoint(g_dot, 1, None)``).  Any other parameter is one the
    helper depends on smoothly and the rule does not differentiate: a differentiated
    value reaching it is refused (MissingRuleError), never taken as a constant.  The
    signature is the helper's own."""
    params = (params,) if isinstance(params, str) else tuple(params)
    for helper in helpers:
        sig = inspect.signature(helper)
        unknown = [p for p in params if p not in sig.parameters]
        if unknown:
            raise TypeError(f"jvp_linear_in({display_name(helper)}): no parameter {unknown}")
        result = "ans" if "ans" not in sig.parameters else "_ans"
        rule = JvpRule(helper, display_name(helper), sig, result, [], {})
        rule.kind = "linear"
        rule.tangent_params = tuple(p for p in sig.parameters if p in params)
        rule.constant_params = tuple(p for p in sig.parameters if p in constant)
        _RULES[_key(helper)] = (helper, rule)


class _DToOnes(gast.NodeTransformer):
    """``d[ans]`` -> ``rt.ones_like(ans)``."""

    def __init__(self, result):
        self.result = result

    def visit_Subscript(self, node):
        if is_adjoint_subscript(node) and node.slice.id == self.result:
            return gast.Call(func=gast.Attribute(value=_name("rt"), attr="ones_like",
                                                 ctx=gast.Load()),
                             args=[_name(self.result)], keywords=[])
        return self.generic_visit(node)


def _name(id_):
    return gast.Name(id=id_, ctx=gast.Load(), annotation=None, type_comment=None)


def jvp_reduction(*primitives):
    """Declare reductions over ``axis`` (with ``keepdims``) in which each input element
    reaches one result element (a median, a nan-aware variance): the VJP template with
    ``d[ans]`` set to ones gives each element's partial derivative, and the tangent is
    ``rt.sum(partials * t[x], axis, keepdims)``."""
    for prim in primitives:
        vjp_rule = lookup(prim)
        if vjp_rule is None or "axis" not in vjp_rule.signature.parameters:
            raise TypeError(f"jvp_reduction({display_name(prim)}): needs a VJP rule with "
                            "an axis parameter")
        _add(prim, lambda prim=prim, vjp_rule=vjp_rule: _reduction_rule(prim, vjp_rule))


def _reduction_rule(prim, vjp_rule):
    """The JvpRule of the reduction ``prim`` from its VJP rule (``jvp_reduction``)."""
    params = vjp_rule.signature.parameters
    statements = []
    for stmt in vjp_rule.statements:
        target = stmt.targets[0]
        value = _DToOnes(vjp_rule.result).visit(copy.deepcopy(stmt.value))
        if isinstance(target, gast.Name):
            statements.append(("local", target.id, value))
            continue
        term = gast.BinOp(left=value, op=gast.Mult(), right=gast.Subscript(
            value=_name("t"), slice=_name(target.slice.id), ctx=gast.Load()))
        keepdims = _name("keepdims") if "keepdims" in params else \
            gast.Constant(value=False, kind=None)
        statements.append(("term", gast.Call(
            func=gast.Attribute(value=_name("rt"), attr="sum", ctx=gast.Load()),
            args=[term, _name("axis"), keepdims], keywords=[])))
    return JvpRule(prim, vjp_rule.name, vjp_rule.signature, vjp_rule.result,
                   statements, dict(vjp_rule.globals))


def registered(primitive):
    """The registered (not derived) JVP rule of ``primitive``, or None."""
    key = _key(primitive)
    if key not in _RULES:
        return None
    entry = _resolved(key)
    if entry[0] is not primitive and not isinstance(primitive, str):
        return None
    return entry[1]


_DERIVED = {}


def jvp_lookup(primitive):
    """The JVP rule of ``primitive``: registered, else derived from an elementwise VJP
    template (module doc), else None."""
    rule = registered(primitive)
    if rule is not None:
        return rule
    key = _key(primitive)
    if key not in _DERIVED:
        _DERIVED[key] = (primitive, derive_from_vjp(primitive))
    entry = _DERIVED[key]
    return entry[1] if entry[0] is primitive else derive_from_vjp(primitive)


def all_jvp_rules():
    """Every registered (primitive, JvpRule) pair, in registration order."""
    return [_resolved(key) for key in list(_RULES)]


# ---------------------------------------------------------------- derived from VJP rules


#: Python operators and builtins that act elementwise (on numbers, or broadcasting arrays)
_ELEMENTWISE = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
                operator.mod, operator.neg, operator.pos, abs, pow, max, min, np.sinc, np.i0,
                np.nan_to_num)


#: scipy.special's elementwise functions that are Python functions, not ufuncs
_SPECIAL_ELEMENTWISE = ("polygamma", "softplus", "zeta", "spherical_jn", "spherical_yn",
                        "spherical_in", "spherical_kn")


def _elementwise(primitive):
    """A numpy ufunc (scipy.special's too), a function of the ``math`` module or a Python
    operator on numbers or arrays: its derivative is elementwise, so a VJP factor is a
    JVP factor."""
    if isinstance(primitive, np.ufunc) or any(primitive is p for p in _ELEMENTWISE):
        return True
    if getattr(primitive, "__module__", "").startswith("scipy.special") and \
            getattr(primitive, "__name__", None) in _SPECIAL_ELEMENTWISE:
        return True
    return getattr(primitive, "__module__", None) == "math" and \
        getattr(math, getattr(primitive, "__name__", ""), None) is primitive


def is_elementwise(primitive):
    """True for a primitive whose derivative is elementwise (``_elementwise``): its JVP
    terms broadcast as the primitive does, with any number of leading axes on a
    tangent."""
    return _elementwise(primitive)


def _is_d_ans(node, result):
    return is_adjoint_subscript(node) and node.slice.id == result or _unreduce_of_d_ans(
        node, result) is not None


def _unreduce_of_d_ans(node, result):
    """(axis, keepdims) nodes when ``node`` is ``rt.unreduce(d[ans], x, axis, keepdims)``:
    the adjoint of a reduction spread back over its input."""
    if (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr == "unreduce" and isinstance(node.func.value, gast.Name)
            and node.func.value.id == "rt" and len(node.args) == 4
            and is_adjoint_subscript(node.args[0]) and node.args[0].slice.id == result):
        return node.args[2], node.args[3]
    return None


def _linear_in_d_ans(node, result):
    """True when ``node`` is ``d[ans]`` times or divided by factors that do not read it
    (``d[ans] * e``, ``e * d[ans]``, ``d[ans] / e``, ``-d[ans] * e``...)."""
    if _is_d_ans(node, result):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return _linear_in_d_ans(node.operand, result)
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        left = _linear_in_d_ans(node.left, result)
        right_reads = _reads_d(node.right)
        if left and not right_reads:
            return True
        if isinstance(node.op, gast.Mult) and not _reads_d(node.left):
            return _linear_in_d_ans(node.right, result)
    return False


def _reads_d(node):
    return any(is_adjoint_subscript(n) for n in gast.walk(node))


def _unbroadcast_of(node, param):
    """``e`` when ``node`` is ``rt.unbroadcast(e, param)``, else None."""
    if (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr == "unbroadcast" and isinstance(node.func.value, gast.Name)
            and node.func.value.id == "rt" and len(node.args) == 2
            and isinstance(node.args[1], gast.Name) and node.args[1].id == param):
        return node.args[0]
    return None


class _DToT(gast.NodeTransformer):
    def __init__(self, result, param):
        self.result, self.param = result, param

    def visit_Call(self, node):
        if _unreduce_of_d_ans(node, self.result) is not None:
            return self.visit_Subscript(node.args[0])
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        if _is_d_ans(node, self.result):
            return gast.Subscript(value=gast.Name(id="t", ctx=gast.Load(), annotation=None,
                                                  type_comment=None),
                                  slice=gast.Name(id=self.param, ctx=gast.Load(),
                                                  annotation=None, type_comment=None),
                                  ctx=gast.Load())
        return self.generic_visit(node)


def _reduction_of(statements, result):
    """(axis, keepdims) when the adjoint statements spread ``d[ans]`` with
    ``rt.unreduce(d[ans], x, axis, keepdims)`` (a reduction: each input element reaches
    one result element), else None."""
    for stmt in statements:
        for node in gast.walk(stmt.value):
            found = _unreduce_of_d_ans(node, result)
            if found is not None:
                return found
    return None


def derive_from_vjp(primitive):
    """A JvpRule made from ``primitive``'s VJP template when every adjoint statement is
    ``d[ans]`` times factors (module doc) and the primitive is elementwise, or when the
    template spreads ``d[ans]`` with ``rt.unreduce`` (a reduction: the tangent is the sum
    of ``t[x]`` times the factors over the reduced axes); None otherwise."""
    if isinstance(primitive, str):
        return None
    vjp_rule = lookup(primitive)
    if vjp_rule is None or not vjp_rule.differentiable or vjp_rule.tuple_result:
        return None
    reduction = _reduction_of(vjp_rule.statements, vjp_rule.result)
    if reduction is None and not _elementwise(primitive):
        return None
    result = vjp_rule.result
    statements = []
    for stmt in vjp_rule.statements:
        if not isinstance(stmt, gast.Assign) or len(stmt.targets) != 1:
            return None
        target = stmt.targets[0]
        if isinstance(target, gast.Name):
            if _reads_d(stmt.value):
                return None
            statements.append(("local", target.id, stmt.value))
            continue
        if not is_adjoint_subscript(target):
            return None
        param = target.slice.id
        value = stmt.value
        inner = _unbroadcast_of(value, param)
        broadcast = inner is not None
        value = inner if broadcast else value
        if not _linear_in_d_ans(value, result):
            return None
        term = _DToT(result, param).visit(copy.deepcopy(value))
        if reduction is not None:
            if broadcast or _reduction_of([stmt], result) is None:
                return None
            term = gast.Call(func=gast.Attribute(value=gast.Name(
                id="rt", ctx=gast.Load(), annotation=None, type_comment=None),
                attr="sum", ctx=gast.Load()),
                args=[term, copy.deepcopy(reduction[0]), copy.deepcopy(reduction[1])],
                keywords=[])
        elif broadcast:
            term = gast.Call(func=gast.Attribute(value=gast.Name(
                id="rt", ctx=gast.Load(), annotation=None, type_comment=None),
                attr="broadcast_like", ctx=gast.Load()),
                args=[term, gast.Name(id=result, ctx=gast.Load(), annotation=None,
                                      type_comment=None)], keywords=[])
        statements.append(("term", term))
    sig = vjp_rule.signature
    return JvpRule(primitive, vjp_rule.name, sig, result, statements, dict(vjp_rule.globals),
                   derived=True)
