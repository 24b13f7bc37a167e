"""Where a model is and how to serve it: cog.yaml, command-line flags and environment.

Everything the parent needs from cog.yaml is gathered into one `ModelConfig`, so the
rest of the code never reads cog.yaml itself; environment variables are read through
`cogserve.process.envvars`.
"""

from __future__ import annotations

import math
import os
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from cogserve.exceptions import DefinitionError
from cogserve.wire.protocol import Mode


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
    openai: Any = None  # cog.yaml `openai:` as written; read by cogserve.openai_api.shapes

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
        cfg.openai = data.get("openai")
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
        if data.get("observability") is not None:
            cfg.environment.update(trace_variables(path, data["observability"]))
    elif predictor is None:
        raise DefinitionError(f"{root}: no cog.yaml here and no --predictor given")
    if predictor:
        cfg.predict_ref = predictor
    return cfg


# ---------------------------------------------------------------- observability:

SAMPLERS = ("always_on", "always_off", "traceidratio", "parentbased_always_on",
            "parentbased_always_off", "parentbased_traceidratio")
RATIO_SAMPLERS = ("traceidratio", "parentbased_traceidratio")
_HEADER = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_RESERVED_HEADERS = ("authorization", "cookie", "host", "traceparent", "tracestate")


def trace_variables(path: pathlib.Path, raw: Any) -> dict[str, str]:
    """cog.yaml `observability:` as the variables a Cog image gets for it.

    Cog checks the section (pkg/config/validate.go) and writes it into the image as
    COG_TRACE_* variables (and copies `config:` to a fixed path) that its parent and
    worker read at run time; cogserve gives the same variables to both of its processes
    (`environment`, where a variable the operator set wins), so one reader serves cog.yaml
    and a deployment that sets them itself.
    """
    where = f"{path}: observability"
    if not isinstance(raw, dict):
        raise DefinitionError(f"{where} must be a mapping")
    traces = raw.get("traces")
    if traces is not None and not isinstance(traces, dict):
        raise DefinitionError(f"{where}.traces must be a mapping")
    enabled = traces.get("enabled") if traces else None
    script = raw.get("config")
    if script is not None and enabled is not True:
        raise DefinitionError(f"{where}.config {script!r}: requires "
                              "observability.traces.enabled to be true")
    if traces is None:
        return {}
    if not isinstance(enabled, bool):
        raise DefinitionError(f"{where}.traces.enabled is required (true or false)")
    sampler = traces.get("sampler", "parentbased_always_off")
    if sampler not in SAMPLERS:
        raise DefinitionError(f"{where}.traces.sampler {sampler!r}: must be a supported "
                              f"OpenTelemetry sampler ({', '.join(SAMPLERS)})")
    ratio = traces.get("sampler_arg")
    if ratio is not None:
        if sampler not in RATIO_SAMPLERS:
            raise DefinitionError(f"{where}.traces.sampler_arg is only valid for ratio "
                                  "samplers")
        if not _is_ratio(ratio):
            raise DefinitionError(f"{where}.traces.sampler_arg {ratio!r}: must be a number "
                                  "between 0 and 1")
    elif sampler in RATIO_SAMPLERS:
        raise DefinitionError(f"{where}.traces.sampler_arg is required for ratio samplers")
    header = traces.get("trace_header")
    if header is not None and (not isinstance(header, str) or not _HEADER.match(header)
                               or header.lower() in _RESERVED_HEADERS):
        raise DefinitionError(f"{where}.traces.trace_header {header!r}: must be a valid, "
                              "non-reserved HTTP header name")
    header_format = traces.get("trace_header_format", "w3c")
    if header_format not in ("w3c", "jaeger"):
        raise DefinitionError(f"{where}.traces.trace_header_format {header_format!r}: must "
                              "be w3c or jaeger")
    if not enabled:
        return {}
    variables = {"COG_TRACE_CONFIGURED": "true", "COG_TRACE_ENABLED": "true",
                 "COG_TRACE_SAMPLER": sampler}
    if ratio is not None:
        variables["COG_TRACE_SAMPLER_ARG"] = str(ratio)
    if header:
        variables["COG_TRACE_HEADER"] = header
        variables["COG_TRACE_HEADER_FORMAT"] = header_format
    if script is not None:
        variables["COG_OBSERVABILITY_CONFIG"] = str(_telemetry_file(path, where, script))
    return variables


def _is_ratio(value: Any) -> bool:
    try:
        number = float(str(value))
    except ValueError:
        return False
    return math.isfinite(number) and 0 <= number <= 1


def _telemetry_file(path: pathlib.Path, where: str, script: Any) -> pathlib.Path:
    """`observability.config`: a Python file inside the model's folder (Cog's rules)."""
    text = script if isinstance(script, str) else ""
    parts = text.replace("\\", "/").split("/")
    if not text or os.path.isabs(text) or "." in parts or ".." in parts:
        raise DefinitionError(f"{where}.config {script!r}: must be a project-relative "
                              "Python file")
    if not text.endswith(".py"):
        raise DefinitionError(f"{where}.config {script!r}: must be a Python file ending "
                              "in .py")
    root = path.parent.resolve()
    resolved = (root / text).resolve()
    if not resolved.exists():
        raise DefinitionError(f"{where}.config {script!r}: file does not exist")
    if not resolved.is_relative_to(root):
        raise DefinitionError(f"{where}.config {script!r}: must resolve inside the project "
                              "directory")
    if not resolved.is_file():
        raise DefinitionError(f"{where}.config {script!r}: must be a regular file")
    return resolved
