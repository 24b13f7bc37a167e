"""An image model as Cog authors write them: a prompt in, `list[Path]` out, with
num_outputs, width and height. Each image is a real PNG of the asked size (written by
hand with zlib, so no imaging library is needed); its one text chunk holds the prompt."""

import struct
import tempfile
import zlib

from cog import BaseRunner, Input, Path


def png(width: int, height: int, text: str) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\0" + b"\x80\x40\xc0" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"tEXt", b"prompt\0" + text.encode()) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


class Runner(BaseRunner):
    def run(self, prompt: str, num_outputs: int = Input(default=1, ge=1, le=4),
            width: int = Input(default=64, ge=8, le=1024),
            height: int = Input(default=64, ge=8, le=1024)) -> list[Path]:
        paths = []
        for k in range(num_outputs):
            with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as fh:
                fh.write(png(width, height, f"{prompt} #{k}"))
            paths.append(Path(fh.name))
        return paths
