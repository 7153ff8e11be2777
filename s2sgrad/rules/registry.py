"""The table of derivative rules, keyed by the primitive callable.

A rule is a template: a small Python function that is never run, only parsed.
Its first parameter names the primitive's result, the rest are the
primitive's own parameters (with the primitive's defaults).  Statements of
the form ``d[x] = expr`` give the contribution to the adjoint of parameter
``x``; ``d[ans]`` is the incoming adjoint of the result.  Other assignments
make template-local temporaries.  Example::

    @vjp(np.exp)
    def _(ans, x):
        d[x] = d[ans] * ans

Besides its parameters and builtins, a template may read ``np``, ``math``,
``rt`` (s2sgrad.runtime) and any module or importable function its own module
defines at top level (``from scipy import special`` ... ``special.digamma(x)``):
the generated module imports what the instantiated statements read, under a
name the function's name allocator hands out (``compiler/syntax/imports.py``).
"""
import builtins
import functools
import inspect
import textwrap

import gast

from ..compiler.syntax.imports import fixed_path, module_and_name


class _AdjointMarker:
    """The ``d`` in templates: ``d[x]`` marks the adjoint of ``x``. Never evaluated."""

    def __getitem__(self, item):  # pragma: no cover - templates are parsed, not run
        raise RuntimeError("rule templates are parsed, never executed")


d = _AdjointMarker()


class Rule:
    """The derivative rule of one primitive.

    ``signature`` binds a call's arguments to the template's parameter names;
    ``statements`` is the template body (gast); ``diff_params`` the names of
    parameters that receive an adjoint; ``result`` the name of the result
    parameter.  A rule with no ``diff_params`` is non-differentiable: its
    result never depends differentiably on its inputs.

    The template's source is parsed on the first use of ``statements``, ``globals`` or
    ``diff_params`` (once per template, however many primitives share it): importing
    s2sgrad parsed some 500 templates, half of its import time, for the few rules a
    program uses.
    """

    tuple_result = False   # the primitive returns a tuple; d[ans] holds its items' adjoints
    #: parameters whose derivative the rule does not give (the order of a Bessel function,
    #: ``a`` of ``gammainc``): a differentiated value reaching one is refused with
    #: MissingRuleError, never given a zero
    refused = frozenset()

    def __init__(self, primitive, template, name, reason=None):
        self.primitive = primitive
        self.name = name
        self.template = template
        #: for a non-differentiable primitive: why its derivative is zero or undefined
        self.reason = reason
        self._diff_params = None
        if template is None:
            self.result = None
            self.signature = None
            self._parsed = _NO_TEMPLATE
            return
        self._parsed = None
        sig = inspect.signature(template)
        params = list(sig.parameters.values())
        self.result = params[0].name
        self.signature = sig.replace(parameters=params[1:])

    def _template(self):
        if self._parsed is None:
            self._parsed = _parsed_template(self.template)
        return self._parsed

    @property
    def statements(self):
        return self._template().statements

    @property
    def globals(self):
        return self._template().globals

    @property
    def diff_params(self):
        """The parameters given an adjoint or refused, in signature order (a tuple, never
        a set: the generated code must not depend on the process's hash seed)."""
        if self._diff_params is None:
            assigned = self._template().assigned
            self._diff_params = tuple(p for p in (self.signature.parameters
                                                  if self.signature is not None else ())
                                      if p in assigned or p in self.refused)
        return self._diff_params

    @property
    def differentiable(self):
        return bool(self.diff_params)

    def bind(self, args, kwargs):
        """Map a call's positional and keyword operands to the template's parameter names.

        Returns a dict, in parameter order, name -> operand; a parameter the call leaves
        out gets its default (a plain Python value).  Raises TypeError when the call does
        not fit the signature.
        """
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def __repr__(self):
        return f"<Rule {self.name}>"


class _Parsed:
    """A template's body (``statements``), the parameters it assigns an adjoint
    (``assigned``) and what it reads from its module (``globals``)."""

    def __init__(self, statements, assigned, globals_):
        self.statements = statements
        self.assigned = frozenset(assigned)
        self.globals = globals_


_NO_TEMPLATE = _Parsed([], (), {})


@functools.lru_cache(maxsize=None)
def _parsed_template(template):
    """The _Parsed of a template function (a TypeError names what its body reads that
    generated code cannot import)."""
    src = textwrap.dedent(inspect.getsource(template))
    fdef = gast.parse(src).body[0]
    params = list(inspect.signature(template).parameters)
    return _Parsed(fdef.body, _assigned_adjoints(fdef.body),
                   _template_globals(template, fdef, params))


#: names every generated module defines: templates read them as they are
_FIXED_NAMES = frozenset({"np", "math", "rt", "d"})


def _template_globals(template, fdef, params):
    """{name: module or function} for the names a template reads from its own module
    (besides ``np``, ``math``, ``rt``, ``d`` and builtins).  A TypeError names one that
    generated code could not import."""
    body = gast.Module(body=fdef.body, type_ignores=[])   # not the decorators or defaults
    assigned = {t.id for n in gast.walk(body) if isinstance(n, gast.Assign)
                for t in n.targets if isinstance(t, gast.Name)}
    found = {}
    for node in gast.walk(body):
        if not isinstance(node, gast.Name) or not isinstance(node.ctx, gast.Load):
            continue
        name = node.id
        if name in _FIXED_NAMES or name in params or name in assigned or name in found:
            continue
        if name not in template.__globals__:
            if hasattr(builtins, name):
                continue
            raise TypeError(f"rule template {template.__qualname__} reads `{name}`, which its "
                            f"module does not define")
        obj = template.__globals__[name]
        if fixed_path(obj) is None and module_and_name(obj) is None:
            raise TypeError(f"rule template {template.__qualname__} reads `{name}` ({obj!r}), "
                            "which generated code cannot import by name: use a module-level "
                            "function of an importable module")
        found[name] = obj
    return found


#: what a template reads from its module, for other rule tables (``jvp_registry``)
template_globals = _template_globals


def _assigned_adjoints(statements):
    names = []
    for node in gast.walk(gast.Module(body=statements, type_ignores=[])):
        if isinstance(node, gast.Assign):
            for tgt in node.targets:
                if is_adjoint_subscript(tgt):
                    names.append(tgt.slice.id)
    return names


def is_adjoint_subscript(node):
    """True for ``d[x]`` in a template: the adjoint of the template's name ``x``."""
    return (isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name)
            and node.value.id == "d" and isinstance(node.slice, gast.Name))


_RULES = {}

#: False while s2sgrad's own tables register (their templates are parsed on first use);
#: True after: a template registered later is parsed at once, so a mistake in it raises
#: where it is registered
_PARSE_AT_ONCE = [False]


def parse_registrations_at_once():
    """Called once s2sgrad's own tables are registered (``rules/__init__.py``)."""
    _PARSE_AT_ONCE[0] = True


def parses_at_registration():
    """True once s2sgrad's own tables are registered (see ``_PARSE_AT_ONCE``)."""
    return _PARSE_AT_ONCE[0]


def _key(obj):
    return obj if isinstance(obj, str) else id(obj)


def vjp(*primitives, tuple_result=False, refuse=()):
    """Register the decorated template as the rule of each primitive given.

    ``tuple_result=True``: the primitive returns a tuple of arrays (``w, v = eigh(a)``);
    the template's ``d[ans]`` then holds one adjoint per item (a list in Python, a tuple
    under Numba: the helpers it is passed to take either).
    ``refuse``: names of parameters the template gives no adjoint for although the result
    depends on them smoothly (no closed form): differentiating through one is refused
    with MissingRuleError at the user's line."""

    def register(template):
        for prim in primitives:
            rule = Rule(prim, template, display_name(prim))
            rule.tuple_result = tuple_result
            rule.refused = frozenset(refuse)
            unknown = rule.refused - set(rule.signature.parameters)
            if unknown:
                raise TypeError(f"vjp({rule.name}, refuse=...): {sorted(unknown)} are not "
                                f"parameters of {template.__qualname__}")
            if parses_at_registration():
                rule.diff_params  # noqa: B018 - parses the template: its errors raise here
            _RULES[_key(prim)] = (prim, rule)
        return template

    return register


def nondifferentiable(*primitives, reason=None):
    """Declare primitives whose results carry no gradient (comparisons, shapes, argmax...).

    ``reason`` says why the derivative is zero or undefined (a boolean result, piecewise
    constant, an integer result...).  The list s2sgrad ships is the table in
    ``s2sgrad/rules/no_gradient.py``; a primitive declared here without a reason
    fails ``tests/test_no_silent_constants.py``.
    """
    for prim in primitives:
        _RULES[_key(prim)] = (prim, Rule(prim, None, display_name(prim), reason))


def lookup(primitive):
    """The Rule of ``primitive``, or None when it has none."""
    entry = _RULES.get(_key(primitive))
    if entry is None or (entry[0] is not primitive and not isinstance(primitive, str)):
        return None
    return entry[1]


def all_rules():
    """Every registered (primitive, Rule) pair, in registration order."""
    return list(_RULES.values())


def display_name(prim):
    if isinstance(prim, str):
        return prim
    mod = getattr(prim, "__module__", None) or ""
    name = getattr(prim, "__qualname__", None) or getattr(prim, "__name__", repr(prim))
    return f"{mod}.{name}" if mod else name
