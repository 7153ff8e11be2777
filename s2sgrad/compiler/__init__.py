"""The compiler: a Python function -> the source of its derivative, stage by stage.

Each folder is a stage, in pipeline order; a module imports its own stage and earlier
ones only (``tests/test_import_graph.py`` asserts it):

- ``ir.py``: the intermediate form every stage after the front end reads (the contract);
- ``syntax/``: the vocabulary of generated code: gast nodes, names, source text, imports;
- ``analysis/``: what is known of the IR: types, shapes, aliasing, activity, liveness;
- ``front/``: source -> IR (parsing, scopes, lowering to SSA with callees inlined);
- ``reverse/``: the reverse transform (adjoint sweep, tapes, rule templates);
- ``forward/``: the forward-mode transform (tangents interleaved with the primal);
- ``batch/``: the batching transform (vmap: a loop over the mapped axis, or vectorised);
- ``optimize/``: passes over the generated statements (inlining, fusion, accumulation);
- ``emit/``: the text a person reads (one comment per user line, lines of 100 columns).

The pipelines at the top run the stages for one transform each: ``pipeline.py``
(reverse mode: value and gradient), ``pipeline_split.py`` (reverse mode with the sweeps
apart: vjp, jacrev), ``pipeline_forward.py`` (jvp, jacfwd), ``pipeline_higher.py``
(forward over reverse: hvp, hessian), ``pipeline_vmap.py`` (vmap) and
``pipeline_primal.py`` (``s2sgrad.jit``: the function itself, its calls inlined, no
derivative).
"""
