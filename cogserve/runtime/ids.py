"""Prediction ids: 26 lowercase base32 characters, as Cog's.

Each character is a random byte mapped onto the 32 letters (256 = 8 x 32, so all are
equally likely): 130 random bits from one getrandom() and one translate(), where
base32 of a uuid4 took ~3 us of pure-Python encoding per prediction.
"""

from __future__ import annotations

import os

# byte -> one of base32's 32 lowercase letters and digits (RFC 4648)
_ID_LETTERS = bytes.maketrans(bytes(range(256)), b"abcdefghijklmnopqrstuvwxyz234567" * 8)


def new_id(prefix: str = "") -> str:
    """A new id; `prefix` replaces its first characters (a Ray Serve replica's tag, so
    that requests naming the id find its replica)."""
    ident = os.urandom(26).translate(_ID_LETTERS).decode("ascii")
    return prefix + ident[len(prefix):]
