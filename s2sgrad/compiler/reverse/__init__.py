"""The reverse transform: the IR -> a forward sweep and an adjoint sweep of statements.

``transform`` walks the IR backwards, instantiating each primitive's rule
(``templates``) into accumulations of adjoints (``adjoints``); ``tape`` decides what a
loop stores for its reversed iterations (``tape_types``: which scalars go on typed
tapes; ``witnesses``: shape-only reads moved off the tape; ``records``: a loop's list
tapes merged into one list of tuples, once both sweeps are written); ``ownership`` removes
copies of adjoint arrays that a move made needless; ``checkpoint`` writes, under
``memory_limit``, each top-level loop as step functions run by the checkpointing driver
(``step_reads``: what a step reads and writes; ``step_tapes``: its one-step tapes)."""
