"""What a model's `build:` section asks for, and the key of the environment that holds it.

The key is a hash of everything that decides the environment's contents: the declared
packages, the requirements file's text (and the size and mtime of local files it names), the Python
version asked for, and cogserve itself (its version and a digest of its files, so an
environment made by a changed local checkout is not reused). A changed cog.yaml therefore
means a new environment; an unchanged one finds the ready environment with no subprocess.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from cogserve.exceptions import DefinitionError

# The oldest Python cogserve's worker runs on. A model declaring an older
# build.python_version (Cog models were published for 3.7-3.9 for years, though `cog build`
# 0.23 refuses below 3.10) is served on the running interpreter instead, said once.
MIN_PYTHON = (3, 11)

# `build:` keys that only make sense for a Docker image; accepted and ignored.
IMAGE_ONLY_KEYS = ("gpu", "cuda", "cudnn", "sdk_version")
KNOWN_KEYS = {"python_version", "python_packages", "python_requirements", "system_packages",
              "run", "pre_install", *IMAGE_ONLY_KEYS}

# Bumped when the layout of an environment changes, so old ones are not reused.
FORMAT = 1

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class BuildSpec:
    """The `build:` section of one model's cog.yaml, checked."""

    directory: pathlib.Path
    python_version: str | None = None
    python_packages: tuple[str, ...] = ()
    requirements: pathlib.Path | None = None  # absolute
    system_packages: tuple[str, ...] = ()
    run: tuple[str, ...] = ()  # build.run and the deprecated pre_install, as shell commands
    ignored: tuple[str, ...] = field(default=())  # image-only keys present

    @property
    def python_too_old(self) -> bool:
        """Whether the declared python_version is older than the worker runs on: the model
        is served on the running interpreter (or an environment made with it) instead."""
        if self.python_version is None or "." not in self.python_version:
            return False  # "3": any Python 3
        wanted = tuple(int(part) for part in self.python_version.split(".")[:2])
        return wanted < MIN_PYTHON

    @property
    def needs_env(self) -> bool:
        """Only a model that declares packages gets an environment of its own."""
        return bool(self.python_packages or self.requirements)

    def requirements_text(self) -> str:
        if self.requirements is None:
            return ""
        try:
            return self.requirements.read_text()
        except OSError as exc:
            raise DefinitionError(
                f"build.python_requirements: cannot read {self.requirements}: {exc.strerror}"
            ) from None

    def requirement_lines(self) -> list[str]:
        """Requirement lines of the file (options and comments left out)."""
        lines = []
        for raw in self.requirements_text().splitlines():
            line = raw.split(" #", 1)[0].strip()
            if line and not line.startswith(("#", "-")):
                lines.append(line)
        return lines

    def named_packages(self) -> dict[str, str]:
        """Normalised package name -> the model's requirement that names it."""
        named: dict[str, str] = {}
        for requirement in (*self.python_packages, *self.requirement_lines()):
            match = _NAME.match(requirement)
            if match and not _looks_like_path(requirement):
                named[normalise(match.group(1))] = requirement.strip()
        return named

    def names_local_files(self) -> bool:
        """Whether a requirement is a path (a wheel or source tree next to cog.yaml)."""
        return any(_looks_like_path(r) for r in (*self.python_packages,
                                                  *self.requirement_lines()))

    def key(self, cogserve_id: str) -> str:
        """The environment's folder name: a hash of all that decides its contents."""
        doc = {
            "format": FORMAT,
            "python": self.python_version or own_python_version(),
            "packages": list(self.python_packages),
            "requirements": self.requirements_text(),
            "local_files": self._local_file_digests(),
            "cogserve": cogserve_id,
        }
        blob = json.dumps(doc, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:20]

    def _local_file_digests(self) -> dict[str, str]:
        """Size and mtime of local files the requirements name: a rebuilt wheel is a new
        environment. Not their bytes: a 2 GB wheel would be hashed at every start."""
        stamps = {}
        for line in (*self.python_packages, *self.requirement_lines()):
            path = self.directory / line.split(";")[0].strip()
            if _looks_like_path(line) and path.is_file():
                stat = path.stat()
                stamps[line] = f"{stat.st_size}:{stat.st_mtime_ns}"
        return stamps


def _looks_like_path(requirement: str) -> bool:
    text = requirement.strip()
    return text.startswith((".", "/", "~", "file:")) or text.endswith((".whl", ".tar.gz", ".zip"))


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def own_python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def parse_build(directory: pathlib.Path, build: Any) -> BuildSpec:
    """Check `build:` of `directory/cog.yaml`; errors name the key at fault."""
    where = directory / "cog.yaml"
    if build is None:
        return BuildSpec(directory=directory)
    if not isinstance(build, dict):
        raise DefinitionError(f"{where}: `build:` must be a mapping")
    packages = _string_list(where, build, "python_packages")
    requirements = build.get("python_requirements")
    if packages and requirements:
        raise DefinitionError(f"{where}: only one of python_packages or python_requirements "
                              "can be set in your cog.yaml, not both")
    req_path = None
    if requirements is not None:
        if not isinstance(requirements, str) or not requirements.strip():
            raise DefinitionError(f"{where}: build.python_requirements must be a file name")
        req_path = (directory / requirements).resolve()
        if not req_path.is_file():
            raise DefinitionError(f"{where}: build.python_requirements: no such file "
                                  f"{requirements!r} in {directory}")
    version = build.get("python_version")
    if version is not None:
        version = str(version).strip()
        if not re.fullmatch(r"3(\.\d+){0,2}", version):
            raise DefinitionError(f'{where}: build.python_version must look like "3.11", '
                                  f"not {build['python_version']!r}")
    run: list[str] = []
    for key in ("pre_install", "run"):
        for item in build.get(key) or []:
            command = item.get("command") if isinstance(item, dict) else item
            if not isinstance(command, str):
                raise DefinitionError(f"{where}: build.{key} entries must be commands, "
                                      f"not {item!r}")
            run.append(command)
    return BuildSpec(
        directory=directory,
        python_version=version,
        python_packages=tuple(packages),
        requirements=req_path,
        system_packages=tuple(_string_list(where, build, "system_packages")),
        run=tuple(run),
        ignored=tuple(k for k in build if k in IMAGE_ONLY_KEYS or k not in KNOWN_KEYS),
    )


def _string_list(where: pathlib.Path, build: dict[str, Any], key: str) -> list[str]:
    value = build.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DefinitionError(f"{where}: build.{key} must be a list of strings")
    return [v.strip() for v in value if v.strip()]
