"""Create and fill a model's environment with uv, reporting each phase as it goes.

uv creates the virtual environment and installs, in one resolution, the same cogserve
(a wheel of the running one, whose requirements include the Cog SDK's own dependencies with
Cog's lower bounds, so a model's pins win) and the model's packages or requirements file.
uv runs in the model's folder, so local paths and `--extra-index-url` in a requirements
file resolve as they would for Cog.
Interpreters are never downloaded (`--no-python-downloads`): a `python_version` with no
matching interpreter on the machine falls back to cogserve's own, said once; one older than
the worker runs on (3.8, 3.9 ...) gets cogserve's own too, as `for_model` has said already.

Every line uv prints goes to `on_line` (the terminal, or `setup.logs` while serving); a
failure raises `EnvBuildError` carrying uv's own message.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence

from cogserve.envs import certs, selfwheel
from cogserve.envs.env_cache import EnvStore
from cogserve.envs.spec import MIN_PYTHON, BuildSpec, normalise
from cogserve.process.lifeline import die_with_parent

LineSink = Callable[[str], None]


class EnvBuildError(Exception):
    """An environment could not be built; the message holds the installer's error."""


def uv_bin() -> str:
    import uv

    return uv.find_uv_bin()


def _uv_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


async def _run(argv: Sequence[str], on_line: LineSink, cwd: pathlib.Path | None = None,
               extra: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Run a command, passing each output line on; kill it if the caller is cancelled.

    `extra`: variables of its own (an install's certificates and scratch folder).
    """
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=_uv_env(extra), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C reaches cogserve only, which ends uv and its group
        preexec_fn=die_with_parent,  # and a cogserve killed mid-build takes uv with it
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        async for raw in process.stdout:
            line = raw.decode(errors="replace").rstrip()
            lines.append(line)
            on_line(line + "\n")
        code = await process.wait()
    except BaseException:
        if process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await process.wait()
        raise
    return code, lines


async def choose_interpreter(version: str | None, on_line: LineSink) -> str:
    """An interpreter on this machine for `python_version`, else cogserve's own."""
    own = sys.executable
    running = ".".join(map(str, sys.version_info[:3]))
    if version is None or running == version or running.startswith(version + "."):
        return own
    wanted = tuple(int(part) for part in version.split(".")[:2])
    if wanted < MIN_PYTHON:
        return own
    argv = [uv_bin(), "python", "find", "--system", "--no-python-downloads", version]
    code, lines = await _run(argv, lambda _line: None)
    if code == 0 and lines and os.path.exists(lines[-1].strip()):
        return lines[-1].strip()
    on_line(f"cogserve: build.python_version {version}: no such interpreter on this machine, "
            f"and none is downloaded; using cogserve's own Python {running}\n")
    return own


async def build(spec: BuildSpec, store: EnvStore, key: str, on_line: LineSink,
                replace: bool = False) -> pathlib.Path:
    """Build the environment for `key` in a temporary folder and publish it atomically.

    One process builds a key at a time; one that waited finds the other's result.
    """
    lock = await store.lock(key, lambda: on_line(
        "cogserve: waiting for another process that is building this environment\n"))
    try:
        ready = None if replace else store.ready(key)
        return ready or await _build(spec, store, key, on_line, replace)
    finally:
        lock.close()


async def _build(spec: BuildSpec, store: EnvStore, key: str, on_line: LineSink,
                 replace: bool) -> pathlib.Path:
    started = time.monotonic()
    python = await choose_interpreter(spec.python_version, on_line)
    build_dir = store.new_build_dir(key)
    try:
        uv = uv_bin()
        on_line(f"cogserve: creating the environment with {_python_named(python, spec)}\n")
        code, lines = await _run([uv, "venv", "--relocatable", "--no-python-downloads",
                                  "--python", python, str(build_dir)], on_line)
        if code != 0:
            raise EnvBuildError("could not create the environment:\n" + "\n".join(lines))
        wheel = selfwheel.ensure_wheel(store.wheels)
        what = [f"cogserve {selfwheel.cogserve_id()} with the Cog SDK's dependencies"]
        if spec.python_packages:
            what.append(f"{len(spec.python_packages)} python_packages")
        argv = [uv, "pip", "install", "--python", str(build_dir / "bin" / "python"),
                "--no-python-downloads", str(wheel), *spec.python_packages]
        if spec.requirements is not None:
            argv += ["-r", str(spec.requirements)]
            what.append(spec.requirements.name)
        on_line(f"cogserve: resolving, downloading and installing {', '.join(what)}\n")
        try:
            with certs.for_build() as trust:
                # uv keeps lock files in TMPDIR for good (uv-setuptools-*.lock, building a
                # source package): in the store, not the user's temporary folder
                code, lines = await _run(argv, on_line, cwd=spec.directory,
                                         extra={**trust.env, "TMPDIR": str(store.scratch())})
        except certs.CertificateError as exc:
            raise EnvBuildError(str(exc)) from None
        if code != 0:
            raise EnvBuildError(_install_error(spec, lines, trust))
        info = {
            "key": key,
            "model": str(spec.directory),
            "python": python,
            "python_version": spec.python_version,
            "python_packages": list(spec.python_packages),
            "python_requirements": str(spec.requirements) if spec.requirements else None,
            "cogserve_id": selfwheel.cogserve_id(),
            "created_at": time.time(),
        }
        path = store.publish(build_dir, key, info, replace=replace)
    except BaseException:
        shutil.rmtree(build_dir, ignore_errors=True)
        raise
    on_line(f"cogserve: environment ready in {time.monotonic() - started:.1f} s: {path}\n")
    return path


def _python_named(python: str, spec: BuildSpec) -> str:
    """The interpreter an environment is made with, and the declared version it stands in
    for when that one is older than the worker runs on."""
    if python != sys.executable or not spec.python_too_old:
        return python
    return (f"Python {sys.version.split()[0]} ({python}), in place of the declared "
            f"python_version {spec.python_version}")


def _install_error(spec: BuildSpec, lines: list[str], trust: certs.Trust) -> str:
    """uv's message, led by what to do about it: an untrusted certificate (which store was
    used, how to add one), or the conflicts between the model's pins and cogserve's needs."""
    output = "\n".join(lines).strip()
    head = trust.failure_hint(output) or "installing the model's packages failed"
    if "No solution found" in output:
        needed = {normalise(m.group(1)): req for req in selfwheel.requirements()
                  if (m := re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req))}
        clashes = [f"the model's requirement {mine!r} conflicts with {needed[name]!r}, which "
                   "cogserve's worker needs"
                   for name, mine in spec.named_packages().items()
                   if name in needed and name in output.lower()]
        if clashes:
            head = "; ".join(clashes)
    if spec.python_too_old:
        head += (f" (cog.yaml declares python_version {spec.python_version}; the environment "
                 f"uses Python {sys.version.split()[0]})")
    return f"{head}:\n{output}"
