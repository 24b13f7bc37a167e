import os
from typing import Any, Optional

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, kind: str = "ok", data: Optional[Any] = None) -> Any:
        if kind == "set":
            return {1, 2}
        if kind == "deep":  # nested deeper than JSON output allows
            value: Any = []
            for _ in range(1000):
                value = [value]
            return value
        if kind == "selfref":
            loop: dict[str, Any] = {}
            loop["self"] = loop
            return loop
        if kind == "bigint":
            return 2**70 + 1
        if kind == "nan":
            return {"nan": float("nan"), "inf": float("inf")}
        if kind == "fd":  # bytes that are not UTF-8, written below Python's sys.stdout
            os.write(1, b"raw \xff\xfe bytes\n")
            return "ok"
        return {"ok": True, "data": data}
