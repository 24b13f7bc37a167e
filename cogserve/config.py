"""Where a model is and how to serve it: cog.yaml, command-line flags and environment.

Everything the parent needs from cog.yaml is gathered into one `ModelConfig`, so the
rest of the code never reads cog.yaml itself; environment variables are read through
`cogserve.envvars`.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass, field
from typing import Any

import yaml

from cogserve.exceptions import DefinitionError
from cogserve.protocol import Mode


@dataclass
class ModelConfig:
    directory: pathlib.Path
    predict_ref: str | None = None
    train_ref: str | None = None
    concurrency: int | None = None  # cog.yaml concurrency.max
    environment: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    build: Any = None  # cog.yaml `build:` as written; checked by cogserve.envs.spec
    weights: Any = None  # cog.yaml `weights:` as written; checked by cogserve.envs.weights

    def default_name(self) -> str:
        """The model's name where none is given: cog.yaml's `image` (last part, no tag),
        else the folder's name. V2 paths and the deploy manifests both use it."""
        if self.image:
            last = self.image.rstrip("/").rsplit("/", 1)[-1]
            return last.split("@", 1)[0].split(":", 1)[0] or last
        return self.directory.name

    def ref(self, mode: Mode) -> str:
        train = mode == Mode.TRAIN
        ref = self.train_ref if train else self.predict_ref
        if not ref:
            key = "train" if train else "run"
            hint = ("; it names only `train:`, so use `cogserve train`"
                    if not train and self.train_ref else "")
            raise DefinitionError(
                f"{self.directory / 'cog.yaml'}: no `{key}:` entry names the model "
                f"(e.g. `{key}: \"{'train' if train else 'run'}.py:"
                f"{'train' if train else 'Runner'}\"`), and no --predictor was given"
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
        cfg.weights = data.get("weights")
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
