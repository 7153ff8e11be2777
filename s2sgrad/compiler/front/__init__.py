"""The front end: a Python function -> the IR of ``compiler/ir.py``.

``frontend`` reads the source and resolves free names as Python would; ``jumps``
rewrites ``break``, ``continue`` and early ``return`` into structured branches;
``lower`` and the ``lower_*`` modules lower statements, expressions, calls and control
flow to SSA with one primitive per operation, inlining the user's callees (``custom``
for user-defined backward rules); ``literals`` and ``spellings`` say how atoms and
primitive calls are written back as code."""
