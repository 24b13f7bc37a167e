"""cog.yaml `weights:` (Cog's managed weights, experimental): files the model finds at a path.

    weights:
      - name: parakeet
        target: /src/weights/parakeet          # where the model reads them
        source:
          uri: weights                         # file://, or a folder beside cog.yaml
          include: ["*.safetensors", "*.json"] # gitignore-style globs
          exclude: ["onnx/"]

Cog packs each source into the image's bundle and bind-mounts it read-only at `target`
when the container starts (`pkg/weights/mount.go`); the entries are checked as Cog checks
them (`pkg/config/validate.go`: names, absolute disjoint targets, patterns). cogserve has
no container: a local source is linked at `target` before the worker starts, through a
view in the environment store (one symlink per included file), and `target` itself is a
symlink to that view, so nothing is copied and a later start replaces its own link. A
target that exists and is not cogserve's link is left alone and refused. Sources this
machine cannot reach by itself (`hf://`, `https://`, ...) are refused naming the source
and what to do instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pathlib
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

from cogserve.exceptions import DefinitionError
from cogserve.model.config import ModelConfig
from cogserve.process.envvars import env_store_root

log = logging.getLogger("cogserve")

# OCI-safe, as Cog requires (its weight names become registry tags).
_NAME = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
VIEWS = "weights"


@dataclass(frozen=True)
class WeightSource:
    uri: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Weight:
    name: str
    target: pathlib.Path
    sources: tuple[WeightSource, ...]


def parse(directory: pathlib.Path, raw: Any) -> tuple[Weight, ...]:
    """`weights:` of directory/cog.yaml, checked by Cog's rules; errors name the entry."""
    if raw is None:
        return ()
    where = directory / "cog.yaml"
    if not isinstance(raw, list):
        raise DefinitionError(f"{where}: `weights:` must be a list")
    weights: list[Weight] = []
    for index, entry in enumerate(raw):
        field = f"weights[{index}]"
        if not isinstance(entry, dict):
            raise DefinitionError(f"{where}: {field} must be a mapping")
        name = entry.get("name")
        if not name or not isinstance(name, str):
            raise DefinitionError(f"{where}: {field}.name is required")
        if not _NAME.match(name):
            raise DefinitionError(
                f"{where}: {field}.name {name!r} must contain only lowercase alphanumeric "
                'characters, hyphens, dots, or underscores (e.g. "my-model-weights")')
        if any(w.name == name for w in weights):
            raise DefinitionError(f"{where}: {field}.name {name!r}: duplicate weight name")
        target = entry.get("target")
        if not target or not isinstance(target, str):
            raise DefinitionError(f"{where}: {field}.target is required")
        if not os.path.isabs(target):
            raise DefinitionError(f"{where}: {field}.target {target!r} must be an absolute "
                                  "path")
        clean = pathlib.Path(os.path.normpath(target))
        if clean == pathlib.Path("/"):
            raise DefinitionError(f'{where}: {field}.target must not be the root "/"')
        for other in weights:
            if clean == other.target:
                raise DefinitionError(f"{where}: {field}.target {target!r}: duplicate weight "
                                      "target")
            if clean.is_relative_to(other.target) or other.target.is_relative_to(clean):
                raise DefinitionError(f"{where}: {field}.target {target!r} overlaps with "
                                      f"{str(other.target)!r}; weight targets must be "
                                      "disjoint")
        weights.append(Weight(name, clean, _sources(where, field, entry.get("source"))))
    return tuple(weights)


def _sources(where: pathlib.Path, field: str, raw: Any) -> tuple[WeightSource, ...]:
    items = raw if isinstance(raw, list) else [raw] if raw else []
    if not items:
        raise DefinitionError(f"{where}: {field}.source is required")
    sources = []
    for number, item in enumerate(items):
        at = f"{field}.source" if len(items) == 1 else f"{field}.source[{number}]"
        if isinstance(item, str):
            item = {"uri": item}
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str) \
                or not item["uri"].strip():
            raise DefinitionError(f"{where}: {at}.uri is required")
        patterns = {key: _patterns(where, f"{at}.{key}", item.get(key))
                    for key in ("include", "exclude")}
        sources.append(WeightSource(item["uri"].strip(), patterns["include"],
                                    patterns["exclude"]))
    return tuple(sources)


def _patterns(where: pathlib.Path, field: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise DefinitionError(f"{where}: {field} must be a list of glob patterns")
    out = []
    for number, text in enumerate(raw):
        pattern = text.strip()
        if not pattern:
            raise DefinitionError(f"{where}: {field}[{number}]: pattern must not be empty")
        if pattern.startswith("!"):
            raise DefinitionError(f"{where}: {field}[{number}] {pattern!r}: negation "
                                  "patterns (starting with '!') are not supported")
        if "\\" in pattern:
            raise DefinitionError(f"{where}: {field}[{number}] {pattern!r}: patterns must "
                                  "use forward slashes, not backslashes")
        out.append(pattern)
    return tuple(out)


# ---------------------------------------------------------------- which files


def _glob_regex(glob: str) -> str:
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            end = glob.find("]", i + 1)
            if end < 0:
                out.append(re.escape(glob[i]))
                i += 1
            else:
                out.append("[" + glob[i + 1:end].replace("!", "^", 1) + "]")
                i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def matches(pattern: str, path: str) -> bool:
    """gitignore's rule for one pattern and a file's path (posix, relative to the source):
    a pattern without a slash matches a name at any depth (a file's, or a folder's, which
    takes the files below it); one with a slash is anchored at the source's root; a
    trailing slash matches folders only; `**` spans folders."""
    folder_only = pattern.endswith("/")
    anchored = "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    parts = path.split("/")
    candidates = parts[:-1] if folder_only else parts  # the names a pattern may match
    if not anchored:
        regex = re.compile(_glob_regex(body) + r"\Z")
        return any(regex.match(name) for name in candidates)
    regex = re.compile(_glob_regex(body) + r"(?:/.*)?\Z" if not folder_only
                       else _glob_regex(body) + r"/.*\Z")
    return bool(regex.match(path))


def selected(source: WeightSource, root: pathlib.Path) -> list[str]:
    """The source's files that pass include (any) and exclude (none), sorted."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    return [f for f in files
            if (not source.include or any(matches(p, f) for p in source.include))
            and not any(matches(p, f) for p in source.exclude)]


# ---------------------------------------------------------------- making them available


def prepare(config: ModelConfig) -> None:
    """Before the model's worker starts: its weights where it reads them (said in the log)."""
    weights = parse(config.directory, config.weights)
    for line in mount(config.directory, weights):
        log.info("%s", line)


def local_root(directory: pathlib.Path, weight: Weight, source: WeightSource) -> pathlib.Path:
    """The folder a source names, or a refusal naming it and what to do instead."""
    uri = source.uri
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme not in ("", "file"):
        raise DefinitionError(
            f"weights {weight.name!r}: source {uri!r} cannot be fetched by cogserve (only "
            "local folders and file:// sources are served; Cog itself imports "
            f"{scheme}:// sources with `cog weights import`). Download it to a folder and "
            f"set source.uri to that folder, e.g. `uri: weights/{weight.name}`")
    path = pathlib.Path(uri[len("file://"):] if scheme else uri).expanduser()
    root = (directory / path).resolve()
    if not root.is_dir():
        raise DefinitionError(f"weights {weight.name!r}: source {uri!r}: no such folder "
                              f"{root}")
    return root


def mount(directory: pathlib.Path, weights: tuple[Weight, ...],
          store: pathlib.Path | None = None) -> list[str]:
    """Make every weight's files available at its target; one line per weight to log."""
    views = (store or env_store_root()) / VIEWS
    said = []
    for weight in weights:
        files: dict[str, pathlib.Path] = {}
        for source in weight.sources:
            root = local_root(directory, weight, source)
            chosen = selected(source, root)
            if not chosen:
                raise DefinitionError(
                    f"weights {weight.name!r}: source {source.uri!r}: include/exclude "
                    "leave no files")
            files.update({name: root / name for name in chosen})
        view = _view(views, weight, files)
        _link(weight, view, views)
        said.append(f"weights {weight.name!r}: {len(files)} files at {weight.target}")
    return said


def _view(views: pathlib.Path, weight: Weight, files: dict[str, pathlib.Path]
          ) -> pathlib.Path:
    """A folder of symlinks to the chosen files, one per content listing (reused)."""
    listing = json.dumps({name: str(path) for name, path in sorted(files.items())})
    key = hashlib.sha256(listing.encode()).hexdigest()[:16]
    view = views / f"{weight.name}-{key}"
    if view.is_dir():
        return view
    views.mkdir(parents=True, exist_ok=True)
    building = pathlib.Path(tempfile.mkdtemp(prefix=f".building-{weight.name}-", dir=views))
    try:
        for name, path in files.items():
            link = building / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)
        building.chmod(0o755)
        os.rename(building, view)
    except FileExistsError:  # another process made the same view first
        shutil.rmtree(building, ignore_errors=True)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return view


def _link(weight: Weight, view: pathlib.Path, views: pathlib.Path) -> None:
    """`target` -> the view: made, or replaced when it is a link of cogserve's."""
    target = weight.target
    if target.is_symlink():
        current = pathlib.Path(os.readlink(target))
        if current == view:
            return
        if not current.is_relative_to(views):
            raise DefinitionError(f"weights {weight.name!r}: target {target} is a link to "
                                  f"{current}, not cogserve's: remove it or change target")
    elif target.exists():
        raise DefinitionError(f"weights {weight.name!r}: target {target} already exists "
                              "and is not cogserve's link: remove it or change target")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.cogserve-{os.getpid()}")
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(view)
        os.replace(temporary, target)  # atomic: a running model never sees it missing
    except OSError as exc:
        raise DefinitionError(
            f"weights {weight.name!r}: cannot make {target} ({exc.strerror}). Cog mounts "
            "weights at their absolute target inside its container; cogserve links them "
            "there on this machine, so the target's folder must be writable by this user"
        ) from None
