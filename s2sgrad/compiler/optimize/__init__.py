"""Passes over the generated statements, after a transform and before emission: single-use
temporaries written into their reader (``substitute``: one engine, a policy for
straight-line code and one for the elementwise chains of loop bodies), the same numbers
spelled with fewer arrays (``spelling``), matrix products added in place
(``accumulate``), arrays of sizes and numbers computed once (``constants``), a value
computed again by the same pure expression read from its first name (``shared``) and,
last, for code run as numpy (large arguments; a slice of a product's columns: a
batched Jacobian too): products of a scaled operand scaled after the product, and
products read through a slice of their last axis made for those columns
(``products``), a loop's sum of matrix products made as one product after it (a
batched Jacobian: ``product_sums``), column blocks read by several passes copied
contiguous once (``views``), chains of elementwise operations made one fused kernel
call (``kernels``) and elementwise results written into arrays kept between calls
(``buffers``).  Each keeps the program's meaning; each is tested on its effect."""
