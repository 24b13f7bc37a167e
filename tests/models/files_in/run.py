"""File inputs arrive as local paths (File: open handles); secrets stay hidden."""

import os
import sys
import tempfile
import time
from typing import Optional

from cog import BaseRunner, File, Input, Path, Secret


def _describe(p: Path) -> dict:
    return {"name": p.name, "data": p.read_text(), "is_path": isinstance(p, Path),
            "local": os.path.isfile(p), "dir": str(p.parent)}


class Runner(BaseRunner):
    def run(
        self,
        p: Optional[Path] = Input(default=None, description="a file"),
        f: Optional[File] = Input(default=None),
        ps: Optional[list[Path]] = Input(default=None),
        text: str = "",
        secret: Optional[Secret] = Input(default=None),
        sleep: float = Input(default=0.0, ge=0),
        swallow: bool = False,
    ) -> dict:
        out: dict = {}
        if p is not None:
            out["p"] = _describe(p)
        if f is not None:
            out["f"] = {"read": f.read().decode(), "has_read": hasattr(f, "read")}
        if ps is not None:
            out["ps"] = [_describe(x) for x in ps]
        # the model's own temporary files must go away with the prediction too
        with tempfile.NamedTemporaryFile(suffix=".tmp", delete=False) as junk:
            junk.write(b"left behind by the model")
        out["junk_dir"] = os.path.dirname(junk.name)
        if text:
            job = _running_job()
            spill = job.message.get("input_file") if job is not None else None
            out["text"] = {"length": len(text), "spilled": bool(spill),
                           "inline_input": job.message.get("input") is not None,
                           "spill_file_left": bool(spill) and os.path.exists(spill)}
        if secret is not None:
            print(f"str={secret} repr={secret!r}")
            out["secret"] = {"str": str(secret), "repr": repr(secret),
                             "length": len(secret.get_secret_value() or "")}
        if sleep:
            print("sleeping", flush=True)
        if swallow:
            deadline = time.time() + sleep
            while time.time() < deadline:
                try:
                    time.sleep(0.05)
                except BaseException:
                    print("ignoring the cancel")
        elif sleep:
            time.sleep(sleep)
        return out


def _running_job():
    """The worker's Job running this call (worker/predict.py: run_sync's `job`)."""
    frame = sys._getframe(1)
    while frame is not None:
        job = frame.f_locals.get("job")
        if job is not None and hasattr(job, "message"):
            return job
        frame = frame.f_back
    return None
