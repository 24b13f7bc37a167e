"""Every input type and every Input() keyword; run() reports what it received.

Inputs that may be omitted are `Optional`: in Cog's schema `= Input(default=None)` on a
type without None is required (a Secret excepted)."""

from typing import Annotated, Any, Literal, Optional

from cog import BaseRunner, File, Input, Opaque, Path, Secret


class Runner(BaseRunner):
    def run(
        self,
        text: str = Input(description="Some text", min_length=1, max_length=8, regex="^[a-z]+$"),
        count: int = Input(default=3, ge=1, le=10),
        ratio: float = Input(default=0.5, ge=0.0, le=1.0),
        flag: bool = False,
        image: Optional[Path] = Input(default=None, description="A file"),
        handle: Optional[File] = Input(default=None),
        token: Secret = Input(default=None),
        words: list[str] = Input(default=["a"], min_length=1),
        numbers: Optional[list[int]] = Input(default=None, ge=0),
        files: Optional[list[Path]] = Input(default=None),
        extra: Optional[dict] = Input(default=None),
        anything: Optional[Any] = Input(default=None),
        maybe: Optional[str] = None,
        maybe_new: str | None = None,
        mixed: int | float | bool | None = Input(default=None),
        either: str | list[str] | None = Input(default=None),
        color: str = Input(default="red", choices=["red", "green", "blue"]),
        size: int = Input(default=2, choices=[1, 2, 3]),
        mode: Literal["fast", "slow"] = "fast",
        old: str = Input(default="x", deprecated=True),
        blob: Optional[Annotated[Any, Opaque]] = None,
        plain: int = 7,
    ) -> dict:
        received = {}
        for name, value in list(locals().items()):
            if name in ("self", "received"):
                continue
            if isinstance(value, Path):
                shown = {"path": True, "content": value.read_text()}
            elif hasattr(value, "read"):
                shown = {"handle": True, "content": value.read().decode()}
            elif isinstance(value, list) and value and isinstance(value[0], Path):
                shown = [p.read_text() for p in value]
            elif isinstance(value, Secret):
                shown = {"secret": str(value), "value": value.get_secret_value()}
            else:
                shown = value
            received[name] = {"type": type(value).__name__, "value": shown}
        return received
