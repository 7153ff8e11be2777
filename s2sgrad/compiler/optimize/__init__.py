"""Passes over the generated statements, after a transform and before emission: single-use
temporaries written into their reader (``inline``), elementwise chains of loop bodies
written as one expression (``fuse``) and matrix products added in place
(``accumulate``).  Each keeps the program's meaning; each is tested on its effect."""
