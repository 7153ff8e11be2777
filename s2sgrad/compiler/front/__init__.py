"""The front end: a Python function -> the IR of ``compiler/ir.py``.

``frontend`` reads the source and resolves free names as Python would; ``jumps``
rewrites ``break``, ``continue`` and early ``return`` into structured branches;
``lower`` lowers to SSA with one primitive per operation, inlining the user's callees
(``custom`` for user-defined backward rules, ``derivative_calls`` for a gradient or
jacfwd object's own code, ``evaluations`` for ``jvp``/``hvp``/``vjp`` called inside).
``lower.Lowerer`` composes objects that each hold what they use: the state of one lowering (``lower_state``), what is known of
each variable and of their memory (``analysis.typeinfo``, ``analysis.aliasing``), and
one lowerer per concern: atoms and captured values (``lower_atoms``), Ops
(``lower_ops``), expressions, calls, statements, run-time ``if`` (``lower_branches``),
loops (``lower_loops``) and what a ``for`` walks (``lower_for``).  ``literals`` and
``spellings`` say how atoms and primitive calls are written back as code."""
