"""``memory_limit``: the option of ``grad`` and ``value_and_grad`` bounding a loop's tape.

``memory_limit_bytes(value)`` takes what the user wrote (None, a number of bytes, or a
string: ``"2GB"``, ``"512 MiB"``, ``"1.5e9"``) and gives the bytes as an int, or None;
anything else raises ``GradientArgumentError`` saying what it accepts.  Decimal units
are powers of 1000 (kB, MB, GB, TB), binary ones powers of 1024 (KiB, MiB, GiB, TiB).
"""
import numbers
import re

from ..errors import GradientArgumentError

#: the units a memory_limit string may end with, and their bytes (case-insensitive)
UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}

_FORM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def memory_limit_bytes(value):
    """``value`` in bytes (an int >= 1), or None for None (see the module doc)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise _refused(value)
    if isinstance(value, str):
        match = _FORM.match(value)
        unit = match.group(2).lower() if match else None
        if match is None or unit not in UNITS:
            raise _refused(value)
        value = float(match.group(1)) * UNITS[unit]
    if value != value or value < 1 or value == float("inf"):
        raise _refused(value)
    return int(value)


def _refused(value):
    return GradientArgumentError(
        f"memory_limit={value!r} is not a size: give the bytes a loop's tape may keep as "
        "a positive int (2_000_000_000) or a string with a unit (\"2GB\", \"512MB\", "
        "\"1.5GiB\"; kB, MB, GB, TB are powers of 1000, KiB, MiB, GiB, TiB of 1024)")
