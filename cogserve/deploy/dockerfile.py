"""`cogserve dockerfile`: a Dockerfile and .dockerignore for a model folder.

The image is what `cogserve serve` needs and nothing more: a slim Python base, cogserve,
the model's environment built at build time by `cogserve env` (so a pod never installs at
start), the model folder, a non-root user, and `cogserve serve` as PID 1 (exec form) so
SIGTERM reaches it directly and drains in-flight predictions within the pod's grace period.
The same image runs on Amazon SageMaker, which starts it as `docker run IMAGE serve`:
the argument lands after the entrypoint (`cogserve serve /src serve`), which serves
SageMaker's /ping and /invocations on 8080 (`cogserve.cloud`); on Vertex AI its AIP_*
variables do the same for Vertex's routes.
"""

from __future__ import annotations

import json
import pathlib
import shlex
from dataclasses import dataclass

import cogserve
from cogserve.deploy import APP_DIR, APP_UID, DEFAULT_PORT, READY_PATH
from cogserve.envs.spec import BuildSpec, parse_build
from cogserve.exceptions import DefinitionError
from cogserve.model.config import ModelConfig

DEFAULT_PYTHON = "3.11"
ENV_DIR = "/opt/cogserve/envs"  # COGSERVE_ENV_DIR: model environments, owned by the app user
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


def _json(args: list[str]) -> str:
    """The exec form of an instruction: no shell, so signals reach the program itself."""
    return json.dumps(args)


def _system_steps(spec: BuildSpec) -> list[str]:
    """build.system_packages and build.run, as root, as Cog's own image build runs them."""
    lines = []
    if spec.system_packages:
        packages = " ".join(shlex.quote(p) for p in spec.system_packages)
        lines.append("RUN apt-get update && apt-get install -y --no-install-recommends "
                     f"{packages} && rm -rf /var/lib/apt/lists/*")
    lines += [f"RUN {command}" for command in spec.run]
    return lines


def _model_environment_steps(spec: BuildSpec) -> list[str]:
    """Copy what decides the model's environment, then build it with `cogserve env`.

    Only cog.yaml and the requirements file are copied first, so that a change to the
    model's code does not rebuild the environment; requirements that name local files
    need the whole folder.
    """
    if not spec.needs_env:
        return []
    owned = f"--chown={APP_UID}:{APP_UID}"
    if spec.names_local_files():
        lines = [f"COPY {owned} . {APP_DIR}"]
    else:
        lines = [f"COPY {owned} cog.yaml {APP_DIR}/cog.yaml"]
        if spec.requirements is not None:
            name = spec.requirements.relative_to(spec.directory.resolve()).as_posix()
            lines.append(f"COPY {owned} {name} {APP_DIR}/{name}")
    return [*lines, f"RUN cogserve env {APP_DIR}"]


def render(config: ModelConfig, options: Options) -> str:
    if not (config.directory / "cog.yaml").is_file():
        raise DefinitionError(f"{config.directory}: no cog.yaml; the image serves the model "
                              "that cog.yaml names")
    spec = parse_build(config.directory, config.build)
    python = DEFAULT_PYTHON if spec.python_too_old else spec.python_version or DEFAULT_PYTHON
    healthcheck = ("import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s"
                   f"{READY_PATH}' % os.environ.get('PORT', '{options.port}'), timeout=5)")
    return "\n".join([
        "# syntax=docker/dockerfile:1",
        f"# written by `cogserve dockerfile` {cogserve.__version__} for {config.directory.name}",
        f"FROM python:{python}-slim",  # 3.8 or 3.9 declared: cogserve needs newer
        "ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "
        f"PORT={options.port} LOG_FORMAT=json COGSERVE_ENV_DIR={ENV_DIR}",
        *_system_steps(spec),
        f"RUN useradd --create-home --uid {APP_UID} --user-group cog && "
        f"mkdir -p {ENV_DIR} && chown {APP_UID}:{APP_UID} {ENV_DIR}",
        "# cogserve itself; override with --build-arg COGSERVE_REQUIREMENT=... (e.g. a wheel",
        "# copied into the model folder, or a git URL)",
        f"ARG COGSERVE_REQUIREMENT={shlex.quote(options.cogserve_requirement)}",
        'RUN pip install --no-cache-dir "$COGSERVE_REQUIREMENT"',
        f"WORKDIR {APP_DIR}",
        f"USER {APP_UID}",
        *_model_environment_steps(spec),
        f"COPY --chown={APP_UID}:{APP_UID} . {APP_DIR}",
        f"EXPOSE {options.port}",
        # cogserve serve drains in-flight predictions on SIGTERM, then exits 0
        "STOPSIGNAL SIGTERM",
        f"HEALTHCHECK --interval=10s --timeout=6s --start-period={HEALTHCHECK_START_PERIOD} "
        f"--retries=3 CMD {_json(['python', '-c', healthcheck])}",
        "# `docker run IMAGE serve` (how SageMaker starts it) serves SageMaker's contract",
        f"ENTRYPOINT {_json(['cogserve', 'serve', APP_DIR])}",
    ]) + "\n"


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
