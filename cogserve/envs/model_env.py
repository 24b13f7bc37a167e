"""The environment one model's worker runs in: found ready in milliseconds, else built.

`for_model` decides whether a model gets one (it declares packages, and the user did not
opt out with `--no-env` / `COGSERVE_NO_ENV=1`); `ModelEnvironment.prepare` returns the
interpreter the worker is started with.
"""

from __future__ import annotations

import logging
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

from cogserve.envs import selfwheel, system
from cogserve.envs.env_cache import MARKER, EnvStore
from cogserve.envs.spec import MIN_PYTHON, BuildSpec, parse_build
from cogserve.model.config import ModelConfig
from cogserve.process.envvars import env_switch

log = logging.getLogger("cogserve")


class ModelEnvironment:
    """One model's environment in the store: its key, and its interpreter once ready."""

    def __init__(self, spec: BuildSpec, store: EnvStore | None = None,
                 rebuild: bool = False) -> None:
        self.spec = spec
        self.store = store or EnvStore()
        self.key = spec.key(selfwheel.cogserve_id())
        self.rebuild = rebuild
        self.path: pathlib.Path | None = None

    @property
    def python(self) -> str | None:
        return str(self.path / "bin" / "python") if self.path else None

    def find_ready(self) -> pathlib.Path | None:
        if self.path is None and not self.rebuild:
            self.path = self.store.ready(self.key)
        return self.path

    async def prepare(self, on_line: Callable[[str], None]) -> str:
        """The interpreter to run the worker with, building the environment if needed."""
        from cogserve.envs import builder  # only to build: a reuse never imports it

        if self.find_ready() is None:
            on_line(f"cogserve: building the model's environment {self.key} "
                    f"in {self.store.root}\n")
            self.path = await builder.build(self.spec, self.store, self.key, on_line,
                                            replace=self.rebuild)
            self.rebuild = False
        assert self.python is not None
        return self.python

    def worker_env(self) -> dict[str, str]:
        """What a process in this environment expects: its bin/ first on PATH."""
        assert self.path is not None
        return {"VIRTUAL_ENV": str(self.path),
                "PATH": f"{self.path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}


def build_spec(config: ModelConfig) -> BuildSpec:
    """`build:` of the model, checked; says once which image-only keys are ignored."""
    spec = parse_build(config.directory, config.build)
    if spec.ignored:
        log.info("cog.yaml build keys ignored (they only apply to a Docker image): %s",
                 ", ".join(spec.ignored))
    return spec


def for_model(config: ModelConfig, no_env: bool = False, rebuild: bool = False,
              **kwargs: Any) -> ModelEnvironment | None:
    """The model's environment, or None: it declares no packages, or the user opted out.

    None too inside a model environment (`cogserve schema` re-runs itself there): the
    parent that started this process already checked cog.yaml and said what it had to.
    """
    opted_out = env_switch("COGSERVE_NO_ENV", False) or no_env  # a bad value: refused first
    if (pathlib.Path(sys.prefix) / MARKER).is_file():
        return None
    spec = build_spec(config)
    system.warn_missing(spec)
    if spec.python_too_old:
        _warn_old_python(spec)
    if not spec.needs_env:
        return None
    if opted_out:
        log.info("not using a model environment (--no-env / COGSERVE_NO_ENV): the worker "
                 "runs with cogserve's own Python")
        return None
    return ModelEnvironment(spec, rebuild=rebuild, **kwargs)


def _warn_old_python(spec: BuildSpec) -> None:
    """One line naming the declared Python and the one the model gets. A log record while
    serving; printed plainly by `predict`/`train`, which keep the log quiet (they print
    each error once themselves) but must still say which Python runs the model."""
    text = ("cog.yaml declares python_version {}, older than cogserve runs a model on "
            "({}.{}+): serving it on Python {}").format(spec.python_version, *MIN_PYTHON,
                                                        sys.version.split()[0])
    if log.isEnabledFor(logging.WARNING):
        log.warning("%s", text)
    else:
        print(f"cogserve: warning: {text}", file=sys.stderr, flush=True)
