"""The forward-mode transform: the IR -> primal statements with tangents interleaved
(``transform``), from the JVP rules of ``s2sgrad/rules/jvp_*.py``."""
