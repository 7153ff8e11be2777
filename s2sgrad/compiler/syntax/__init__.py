"""The vocabulary of generated code, shared by every stage: building gast nodes
(``nodes``), naming the generated function's variables (``naming``), turning nodes
into source text (``source``) and reading callables of other modules (``imports``)."""
