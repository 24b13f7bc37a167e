"""An image model for the playground: a PNG gradient of the asked size and colour.

The PNG is written by hand (zlib + struct) so the test needs no imaging library.
"""

import struct
import tempfile
import zlib

from cog import BaseRunner, Input, Path


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(
        b"\0" + b"".join(bytes((rgb[0] * x // width, rgb[1] * y // height, rgb[2]))
                         for x in range(width))
        for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


class Runner(BaseRunner):
    def run(self, width: int = Input(default=320, ge=1, le=512),
            height: int = Input(default=180, ge=1, le=512),
            color: str = Input(default="violet", choices=["violet", "teal", "orange"],
                               description="The gradient's colour")) -> Path:
        rgb = {"violet": (160, 60, 255), "teal": (0, 200, 180), "orange": (255, 150, 0)}[color]
        print(f"drawing {width}x{height} {color}")
        with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as fh:
            fh.write(png(width, height, rgb))
        return Path(fh.name)
