"""argparse types for the CLI's numeric flags, bounded as their environment variables are.

`type=int` takes any integer, and a bad one then fails late and far from its flag: a port
past 65535 was taken modulo 65536 by the socket (the log said 99999, the server listened
on 34463), written into a Dockerfile as it was, or ended `cogserve ray` in a traceback;
`--max-body-bytes 0` answered every request 413. These refuse it where it is read, with
argparse's `error: argument -p/--port: ...` and exit status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

PORT_MAX = 65535


def whole(minimum: int) -> Callable[[str], int]:
    """A whole number of at least `minimum`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value
    return parse


def port(minimum: int) -> Callable[[str], int]:
    """A TCP port from `minimum` (0: the system picks a free one) to 65535."""
    at_least = whole(minimum)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > PORT_MAX:
            raise argparse.ArgumentTypeError(
                f"{value} is not a port number ({minimum}-{PORT_MAX})")
        return value
    return parse
