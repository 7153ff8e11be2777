"""The batching transform (vmap): a function -> the source of its batched version.

- ``loops.py``: the loop form, for any function or derivative object: the function runs
  once per index of the mapped axis and each result is written into its row (a ``prange``
  under Numba), and the differentiable spelling of the same loop (lists and
  ``np.stack``) that the derivative transforms read when they differentiate a vmap;
- ``vectorise.py``: the vectorised form, for loop-free array code whose operations
  batch by a leading axis (batching rules per operation, as JAX's).

``compiler/pipeline_vmap.py`` chooses between them and writes the module.
"""
