"""One naming scheme, and one allocator, for the generated function.

Forward values keep the user's names (a reassigned name gets ``_1``, ``_2``...),
temporaries are ``t1``, ``t2``..., and the adjoint of ``x`` is ``dx``.

Every name the generated code holds comes from the function's ``NameAllocator``:

- ``claim_source(node)`` first claims every identifier of a function's source (its
  parameters, locals, the globals and modules it reads); the lowerer calls it for the
  differentiated function and for every function, method and Cell ``construct`` it
  inlines, before lowering its body;
- ``variable(hint)`` names a value of the user's program (an SSA version of one of
  its variables): it may take the user's own name;
- ``fresh(hint)`` (and ``temp``, ``adjoint``, ``module``) names something the
  generator invents (an adjoint, a tape stack, an iteration counter, the output,
  a rule template's local): it never takes a name of the user's source, so a
  generated name can never capture (overwrite) a user's variable, and a user's
  ``value``, ``dx``, ``n_iter`` or ``t1`` stays what the user meant.

Names of builtins and of the modules generated code imports (``np``, ``math``,
``rt``) are never handed out.
"""
import builtins
import keyword

import gast

RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"np", "math", "rt", "d"}


def source_names(node):
    """Every identifier a (gast) function node mentions: names read and written,
    parameters, nested functions' names and parameters, imported aliases."""
    names = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name):
            names.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, gast.alias):
            names.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            names.update(n.names)
        elif isinstance(n, gast.ExceptHandler) and isinstance(n.name, str):
            names.add(n.name)
    return names


class NameAllocator:
    """Hands out names that are unique within one generated function (see module doc)."""

    def __init__(self):
        self.used = set()
        #: identifiers of the user's source seen so far: generated names avoid them
        self.user = set()
        self._temp = 0
        #: names that stand for values the reverse pass fills in and renames away
        #: (``placeholder``): never part of another name
        self.placeholders = set()
        #: modules generated code reads besides np, math and rt: dotted path -> the name
        #: it reads them by (see ``module`` and ``compiler/imports.py``)
        self.modules = {}

    def claim_source(self, node):
        """Claim every identifier of the user's function ``node`` (a gast FunctionDef or
        Lambda): no generated name will be one of them."""
        self.user.update(source_names(node))

    def _first_free(self, base, taken):
        """``base``, or ``base_1``, ``base_2``... the first one neither the allocator,
        the reserved names nor ``taken`` hold."""
        name, i = base, 0
        while name in self.used or name in RESERVED or name in taken:
            i += 1
            name = f"{base}_{i}"
        return name

    def _pick(self, hint, taken):
        base = hint if hint.isidentifier() and not keyword.iskeyword(hint) else "v"
        name = self._first_free(base, taken)
        self.used.add(name)
        return name

    def variable(self, hint):
        """A name for a value of the user's program: ``hint`` itself (the user's name)
        when free, else ``hint_1``, ``hint_2``..."""
        return self._pick(hint, ())

    def fresh(self, hint):
        """A name the generator invents: like ``hint`` and never a name of the user's
        source (``value`` -> ``value_1`` when the user has a ``value``)."""
        return self._pick(hint, self.user)

    def available(self, hint):
        """A name like ``hint`` that neither the user's source nor the allocator uses,
        without claiming it (for a name written into the user's code as it is lowered,
        such as the index of a loop over an array's rows)."""
        return self._first_free(hint, self.user)

    def placeholder(self, hint):
        """A name that stands in for a value known only to the reverse pass (the incoming
        gradient a custom backward reads), which renames it before anything is written."""
        name = self.fresh(hint)
        self.placeholders.add(name)
        return name

    def snapshot(self):
        """The allocator's state, to undo names handed out by a discarded attempt."""
        return (set(self.used), set(self.user), self._temp, dict(self.modules),
                set(self.placeholders))

    def restore(self, state):
        used, user, temp, modules, placeholders = state
        self.used, self.user, self._temp, self.modules = set(used), set(user), temp, \
            dict(modules)
        self.placeholders = set(placeholders)

    def module(self, path):
        """The name generated code reads module ``path`` (``'scipy.special'``) by: its last
        component (``special``), made unique on first use and the same afterwards."""
        if path not in self.modules:
            self.modules[path] = self.fresh(path.rsplit(".", 1)[-1])
        return self.modules[path]

    def claim(self, name):
        """Mark ``name`` as taken again (a name handed out before a ``restore`` that is
        still in use, such as a free value's argument)."""
        self.used.add(name)

    def temp(self):
        """A new temporary: ``t1``, ``t2``... (never a name of the user's source)."""
        while True:
            self._temp += 1
            name = f"t{self._temp}"
            if name not in self.used and name not in self.user:
                self.used.add(name)
                return name

    def adjoint(self, name):
        """The adjoint name of forward variable ``name``: ``d<name>``, made unique."""
        return self.fresh("d" + name)
