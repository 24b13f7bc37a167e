"""A PEP 517 backend that writes a one-module wheel.

If TINYPKG_GATE names a file, the build waits (up to 120 s) until that file exists: a
test can hold an environment build in progress for as long as it needs.
"""

import base64
import hashlib
import os
import time
import zipfile

NAME, VERSION = "cogserve_tinypkg", "0.1.0"
MODULE = 'VALUE = "tiny"\n'


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    gate = os.environ.get("TINYPKG_GATE")
    deadline = time.monotonic() + 120
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.05)
    info = f"{NAME}-{VERSION}.dist-info"
    files = {
        f"{NAME}.py": MODULE.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: cogserve-tinypkg\n"
                            f"Version: {VERSION}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tinypkg\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join(record) + f"\n{info}/RECORD,,\n").encode()
    wheel = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def _digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
