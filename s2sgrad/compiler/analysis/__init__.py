"""What is known of the IR while building: ranks and dtypes (``typeinfo``), symbolic
shapes (``shapes``), memory that values may share (``aliasing``), which values need a
derivative (``activity``), complex values (``complex_values``) and which names a
generated statement list reads and writes (``liveness``).  Analyses read the IR or the
generated statements; they write neither.  ``TypeInfo`` and ``AliasTracking`` are
the tables one lowering fills as it goes (``front/lower.py`` makes one of each)."""
