"""Where a model is and how to serve it: cog.yaml, command-line flags and environment.

Everything the parent needs is gathered into one `ModelConfig`, so the rest of the code
never reads cog.yaml or os.environ itself.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass, field
from typing import Any

import yaml

from cogserve.exceptions import DefinitionError


@dataclass
class ModelConfig:
    directory: pathlib.Path
    predict_ref: str | None = None
    train_ref: str | None = None
    concurrency: int | None = None  # cog.yaml concurrency.max
    environment: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    build: Any = None  # cog.yaml `build:` as written; checked by cogserve.envs.spec

    def default_name(self) -> str:
        """The model's name where none is given: cog.yaml's `image` (last part, no tag),
        else the folder's name. V2 paths and the deploy manifests both use it."""
        if self.image:
            last = self.image.rstrip("/").rsplit("/", 1)[-1]
            return last.split("@", 1)[0].split(":", 1)[0] or last
        return self.directory.name

    def ref(self, mode: str) -> str:
        ref = self.train_ref if mode == "train" else self.predict_ref
        if not ref:
            key = "train" if mode == "train" else "run"
            hint = ("; it names only `train:`, so use `cogserve train`"
                    if mode != "train" and self.train_ref else "")
            raise DefinitionError(
                f"{self.directory / 'cog.yaml'}: no `{key}:` entry names the model "
                f"(e.g. `{key}: \"{'train' if mode == 'train' else 'run'}.py:"
                f"{'train' if mode == 'train' else 'Runner'}\"`), and no --predictor was given"
                + hint
            )
        return ref


def load_config(directory: str | os.PathLike[str] | None = None,
                predictor: str | None = None) -> ModelConfig:
    """Read `cog.yaml` of `directory` (if present); `predictor` overrides its `run:`."""
    root = pathlib.Path(directory or ".").resolve()
    if not root.is_dir():
        raise DefinitionError(f"{root}: no such directory")
    cfg = ModelConfig(directory=root)
    path = root / "cog.yaml"
    if path.exists():
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise DefinitionError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise DefinitionError(f"{path}: expected a mapping at the top level")
        for key in ("run", "predict", "train"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise DefinitionError(f'{path}: `{key}:` must be a string like "run.py:Runner", '
                                      f"not {data[key]!r}")
        cfg.predict_ref = data.get("run") or data.get("predict")
        cfg.train_ref = data.get("train")
        cfg.image = data.get("image")
        cfg.build = data.get("build")
        conc = data.get("concurrency")
        if isinstance(conc, dict) and conc.get("max") is not None:
            try:
                cfg.concurrency = int(conc["max"])
            except (TypeError, ValueError):
                raise DefinitionError(f"{path}: concurrency.max must be an integer") from None
        for entry in data.get("environment") or []:
            key, sep, value = str(entry).partition("=")
            if not sep or not key:
                raise DefinitionError(f"{path}: environment entry {entry!r} is not KEY=VALUE")
            cfg.environment[key.strip()] = value
    elif predictor is None:
        raise DefinitionError(f"{root}: no cog.yaml here and no --predictor given")
    if predictor:
        cfg.predict_ref = predictor
    return cfg


def env_float(name: str, default: float | None) -> float | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw.rstrip("s"))
    except ValueError:
        raise DefinitionError(f"environment variable {name}={raw!r} is not a number") from None


def env_int(name: str, default: int | None) -> int | None:
    value = env_float(name, None)
    return default if value is None else int(value)


def env_flag(name: str) -> bool:
    """A yes/no environment variable: 1, true, yes, on (any case) are yes."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
