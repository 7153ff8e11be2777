"""Backends: the on-disk cache of generated modules and the Numba compiler."""
