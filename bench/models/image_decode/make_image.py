"""Write the proxy's input: a 224x224 JPEG of ~30 KB (fixed noise over gradients).

Run with a Python that has Pillow: `python make_image.py OUT.jpg`. Deterministic, so
every system and every run decodes the same bytes.
"""

import random
import sys

from PIL import Image

SIZE = 224


def make() -> Image.Image:
    rng = random.Random(35)
    pixels = bytes(
        min(255, max(0, (x * 255 // SIZE if c == 0 else y * 255 // SIZE if c == 1 else 128)
                     + rng.randint(-56, 56)))
        for y in range(SIZE) for x in range(SIZE) for c in range(3))
    return Image.frombytes("RGB", (SIZE, SIZE), pixels)


if __name__ == "__main__":
    make().save(sys.argv[1], "JPEG", quality=90)
