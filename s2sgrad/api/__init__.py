"""The public entry points, one module per mode (``import s2sgrad`` re-exports them):

- ``reverse``: ``grad``, ``value_and_grad``, ``custom_vjp``, ``show`` and
  ``GradFunction``, the derivative object the other modes build on;
- ``split``: ``vjp`` and ``jacrev`` (reverse mode with the two sweeps apart);
- ``forward``: ``jvp`` and ``jacfwd``;
- ``higher``: ``hvp`` and ``hessian`` (forward over reverse) and the compositions of
  the transforms above;
- ``call_plan``: what a repeated call of a derivative skips.
"""
