"""One naming scheme for the generated function.

Forward values keep the user's names (a reassigned name gets ``_1``, ``_2``...),
temporaries are ``t1``, ``t2``..., and the adjoint of ``x`` is ``dx``.
Names of builtins and of the modules generated code imports are never used.
"""
import builtins
import keyword

RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"np", "math", "rt", "d"}


class NameAllocator:
    """Hands out names that are unique within one generated function."""

    def __init__(self):
        self.used = set()
        self._temp = 0
        #: modules generated code reads besides np, math and rt: dotted path -> the name
        #: it reads them by (see ``module`` and ``compiler/imports.py``)
        self.modules = {}

    def fresh(self, hint):
        """A new name that looks like ``hint`` (``hint``, then ``hint_1``, ``hint_2``...)."""
        base = hint if hint.isidentifier() else "v"
        if base not in self.used and base not in RESERVED:
            self.used.add(base)
            return base
        i = 1
        while f"{base}_{i}" in self.used or f"{base}_{i}" in RESERVED:
            i += 1
        name = f"{base}_{i}"
        self.used.add(name)
        return name

    def snapshot(self):
        """The allocator's state, to undo names handed out by a discarded attempt."""
        return set(self.used), self._temp, dict(self.modules)

    def restore(self, state):
        used, temp, modules = state
        self.used, self._temp, self.modules = set(used), temp, dict(modules)

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
        """A new temporary: ``t1``, ``t2``..."""
        while True:
            self._temp += 1
            name = f"t{self._temp}"
            if name not in self.used:
                self.used.add(name)
                return name

    def adjoint(self, name):
        """The adjoint name of forward variable ``name``: ``d<name>``, made unique."""
        return self.fresh("d" + name if not name.startswith("_") else "d" + name)
