"""The public entry points, one module per mode (``import s2sgrad`` re-exports them).

Every transform gives (or runs) a derivative object, a subclass of
``derivative.Derivative``: the base builds the code once per argument signature,
caches and loads it, keeps a call plan per argument types, runs it and reports
``source``, ``path``, ``backend`` and ``fallback_reason``, and pickles by the function,
the options and the generated code (loaded again, never generated, where unpickled); a mode provides the
compiler pipeline it runs and the shape of its results, through the hooks the base
documents.

- ``reverse``: ``grad``, ``value_and_grad``, ``custom_vjp`` and ``GradFunction``;
- ``split``: ``vjp`` and ``jacrev`` (reverse mode with the two sweeps apart:
  ``SplitFunction``, ``JacrevFunction``);
- ``forward``: ``jvp`` and ``jacfwd`` (``ForwardFunction``, ``JacfwdFunction``);
- ``jacobian``: ``jacobian`` (``JacobianFunction``: ``jacfwd`` or ``jacrev``, whichever
  needs fewer sweeps for a call's sizes);
- ``higher``: ``hvp`` and ``hessian`` (forward over reverse: ``HvpFunction``,
  ``HessianFunction``) and the gradient of a gradient (``GradOfGradFunction``);
- ``vmap``: ``vmap`` (not a derivative: the batched function, ``Vmap``), its axes
  checked in ``vmap_axes``;
- ``jit``: ``jit`` (not a derivative: the function compiled as written, ``Jit``, built
  on the ``Derivative`` base for its builds, guards and call plans; transparent to every
  transform through ``arguments.check_function``);
- ``composed``: reverse-mode transforms of a derivative object (grad, jacrev, vjp,
  hessian, hvp of jacfwd(f), hessian(f)...), built as forward mode over it;
- ``inside``: the rule of a derivative object called inside a differentiated function
  (``gradient_rule`` for a gradient, ``jacobian_rule`` for every other object);
- ``evaluated``: the code the front end inlines for ``jvp``, ``hvp`` and ``vjp`` (and a
  ``jacfwd`` object) called inside a differentiated or jitted function;
- ``show``: ``show``, with every mode's derivative object declared in ``MODES``;
- ``derivative``: ``Derivative`` and ``derivative_for`` (a derivative kept per function
  and options); ``loading``: generated code loaded (``load_function``) and an error in
  it traced to the user's line;
- ``nested``: a derivative object as a Python function, for a derivative of it (each
  object's ``as_function`` calls one of its writers);
- ``arguments``: the checks of options and arguments every mode shares, and what code
  is specialised on; ``results``: gradients and outputs in the form of their inputs;
- ``call_plan``: what a repeated call of a derivative skips.

Imports run one way: ``arguments``, ``results``, ``call_plan``, ``inside`` and ``nested``
import no other module of the package but ``arguments``; ``evaluated`` imports
``nested`` (``forward``, ``higher`` and ``split`` import it); ``loading`` and ``derivative``
import those; ``forward`` imports ``derivative``; ``composed`` imports ``forward``;
``higher`` imports ``composed`` and ``forward``; ``reverse`` and ``split`` import
``derivative``, ``composed`` and ``forward`` (``reverse`` ``higher`` too); ``show``
imports every mode; ``jacobian`` imports ``forward`` and ``split``; ``jit`` imports
``derivative``.
"""
