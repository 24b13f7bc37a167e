"""Plain Cog inputs (no numpy) served as V2 tensors."""

import sys
import time

from cog import BaseModel, BaseRunner, Input, Path


class Output(BaseModel):
    text: str
    total: float
    count: int
    flag: bool
    numpy_loaded: bool
    file_size: int | None = None
    extra_keys: list[str] | None = None


class Runner(BaseRunner):
    def run(
        self,
        text: str,
        count: int = Input(default=1, ge=0, le=10),
        scale: float = 1.0,
        flag: bool = False,
        values: list[float] = Input(default=[]),
        mode: str = Input(default="upper", choices=["upper", "lower", "fail"]),
        doc: Path | None = None,
        extra: dict | None = None,
        sleep: float = 0.0,
    ) -> Output:
        if sleep:
            time.sleep(sleep)
        if mode == "fail":
            raise RuntimeError(f"the model failed on {text!r}")
        text = text.upper() if mode == "upper" else text.lower()
        return Output(
            text=text * count,
            total=sum(values) * scale,
            count=count,
            flag=not flag,
            numpy_loaded="numpy" in sys.modules,
            file_size=doc.stat().st_size if doc is not None else None,
            extra_keys=sorted(extra) if extra is not None else None,
        )
