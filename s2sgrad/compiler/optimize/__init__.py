"""Passes over the generated statements, after a transform and before emission: single-use
temporaries written into their reader (``substitute``: one engine, a policy for
straight-line code and one for the elementwise chains of loop bodies), the same numbers
spelled with fewer arrays (``spelling``), matrix products added in place
(``accumulate``), arrays of sizes and numbers computed once (``constants``) and, last,
chains of elementwise operations made one fused kernel call (``kernels``) and
elementwise results written into arrays kept between calls (``buffers``), both for code
run as numpy with large arguments.  Each keeps the program's meaning; each is tested on
its effect."""
