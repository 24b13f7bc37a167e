"""`cogserve dockerfile`: a Dockerfile and .dockerignore for a model folder.

The image is what `cogserve serve` needs and nothing more: a slim Python base, cogserve,
the model's packages from cog.yaml installed at build time (so a pod never installs at
start), the model folder, a non-root user, and `cogserve serve` as PID 1 so SIGTERM
reaches it directly and drains in-flight predictions within the pod's grace period.
"""

from __future__ import annotations

import json
import pathlib
import shlex
from dataclasses import dataclass

import cogserve
from cogserve.config import ModelConfig
from cogserve.deploy import APP_DIR, APP_UID, DEFAULT_PORT, READY_PATH
from cogserve.exceptions import DefinitionError

DEFAULT_PYTHON = "3.11"
# a slow setup() is not a failure: Docker counts no failed check in this window
HEALTHCHECK_START_PERIOD = "300s"

DOCKERIGNORE = """\
# written by `cogserve dockerfile`: what never belongs in the image
.git
.cog
.venv
**/__pycache__
**/*.pyc
.pytest_cache
.mypy_cache
.ruff_cache
.env
Dockerfile
.dockerignore
"""


@dataclass
class Options:
    cogserve_requirement: str = f"cogserve=={cogserve.__version__}"  # a pip requirement
    port: int = DEFAULT_PORT


@dataclass
class _Build:
    """The parts of cog.yaml's `build:` an image honours."""

    python_version: str
    python_packages: list[str]
    python_requirements: str | None
    system_packages: list[str]

    @classmethod
    def of(cls, config: ModelConfig) -> _Build:
        build = config.build
        where = config.directory / "cog.yaml"
        version = build.get("python_version") or DEFAULT_PYTHON
        if not isinstance(version, str | float | int):
            raise DefinitionError(f"{where}: build.python_version must be a version like 3.11")
        requirements = build.get("python_requirements")
        if requirements is not None:
            if not isinstance(requirements, str):
                raise DefinitionError(f"{where}: build.python_requirements must be a file name")
            if not (config.directory / requirements).is_file():
                raise DefinitionError(f"{where}: build.python_requirements names "
                                      f"{requirements!r}, which is not a file in the model folder")
        return cls(python_version=str(version),
                   python_packages=_strings(build, "python_packages", where),
                   python_requirements=requirements,
                   system_packages=_strings(build, "system_packages", where))


def _strings(build: dict[str, object], key: str, where: pathlib.Path) -> list[str]:
    value = build.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DefinitionError(f"{where}: build.{key} must be a list of strings")
    return list(value)


def _json(args: list[str]) -> str:
    """The exec form of an instruction: no shell, so signals reach the program itself."""
    return json.dumps(args)


def _install_model_environment(build: _Build) -> list[str]:
    """The step that installs the model's packages into the image.

    One place, so that it becomes `RUN cogserve env .` (the model's own environment,
    issue #18) with a one-line change once that command exists.
    """
    lines: list[str] = []
    if build.python_requirements:
        lines.append(f"COPY {build.python_requirements} {APP_DIR}/{build.python_requirements}")
    args = [shlex.quote(p) for p in build.python_packages]
    if build.python_requirements:
        args += ["-r", shlex.quote(f"{APP_DIR}/{build.python_requirements}")]
    if args:
        lines.append(f"RUN pip install --no-cache-dir {' '.join(args)}")
    return lines


def render(config: ModelConfig, options: Options) -> str:
    if not (config.directory / "cog.yaml").is_file():
        raise DefinitionError(f"{config.directory}: no cog.yaml; the image serves the model "
                              "that cog.yaml names")
    build = _Build.of(config)
    healthcheck = ("import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s"
                   f"{READY_PATH}' % os.environ.get('PORT', '{options.port}'), timeout=5)")
    lines = [
        "# syntax=docker/dockerfile:1",
        f"# written by `cogserve dockerfile` {cogserve.__version__} for {config.directory.name}",
        f"FROM python:{build.python_version}-slim",
        "ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "
        f"PORT={options.port} LOG_FORMAT=json",
    ]
    if build.system_packages:
        packages = " ".join(shlex.quote(p) for p in build.system_packages)
        lines.append("RUN apt-get update && apt-get install -y --no-install-recommends "
                     f"{packages} && rm -rf /var/lib/apt/lists/*")
    lines += [
        f"RUN useradd --create-home --uid {APP_UID} --user-group cog",
        "# cogserve itself; override with --build-arg COGSERVE_REQUIREMENT=... (e.g. a wheel",
        "# copied into the model folder, or a git URL)",
        f"ARG COGSERVE_REQUIREMENT={shlex.quote(options.cogserve_requirement)}",
        'RUN pip install --no-cache-dir "$COGSERVE_REQUIREMENT"',
        f"WORKDIR {APP_DIR}",
        f"COPY cog.yaml {APP_DIR}/cog.yaml",
        *_install_model_environment(build),
        f"COPY --chown={APP_UID}:{APP_UID} . {APP_DIR}",
        f"USER {APP_UID}",
        f"EXPOSE {options.port}",
        # cogserve serve drains in-flight predictions on SIGTERM, then exits 0
        "STOPSIGNAL SIGTERM",
        f"HEALTHCHECK --interval=10s --timeout=6s --start-period={HEALTHCHECK_START_PERIOD} "
        f"--retries=3 CMD {_json(['python', '-c', healthcheck])}",
        f"ENTRYPOINT {_json(['cogserve', 'serve', APP_DIR])}",
    ]
    return "\n".join(lines) + "\n"


def write(config: ModelConfig, options: Options, force: bool = False) -> list[pathlib.Path]:
    """Write Dockerfile and .dockerignore into the model folder; refuse to overwrite."""
    files = {config.directory / "Dockerfile": render(config, options),
             config.directory / ".dockerignore": DOCKERIGNORE}
    if not force:
        existing = [p.name for p in files if p.exists()]
        if existing:
            raise DefinitionError(f"{config.directory}: {' and '.join(existing)} already "
                                  "exist; pass --force to overwrite")
    for path, text in files.items():
        path.write_text(text)
    return list(files)
