"""`cogserve env`: build a model's environment ahead of time, list, remove and prune them.

The environment's path goes to stdout (so `$(cogserve env DIR)` works, e.g. in a
Dockerfile); progress and everything else go to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import sys

from cogserve.envs import system
from cogserve.envs.builder import EnvBuildError
from cogserve.envs.env_cache import EnvStore
from cogserve.envs.model_env import ModelEnvironment, build_spec
from cogserve.model.config import load_config
from cogserve.process import interrupt


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = sub.add_parser(
        "env", help="build the model's Python environment and print its path",
        description="Build the virtual environment for the packages the model's cog.yaml "
                    "declares (once; reused while cog.yaml and cogserve are unchanged) and "
                    "print its path. Environments are kept in COGSERVE_ENV_DIR (default "
                    "~/.cache/cogserve/envs).")
    env.add_argument("directory", nargs="?", default=".")
    action = env.add_mutually_exclusive_group()
    action.add_argument("--rebuild", action="store_true", help="build a fresh one")
    action.add_argument("--remove", action="store_true", help="remove this model's environment")
    action.add_argument("--list", action="store_true", help="list all environments")
    action.add_argument("--prune", action="store_true",
                        help="remove environments unused for --days days, and leftovers")
    env.add_argument("--days", type=float, default=30.0, help="for --prune (default 30)")
    env.add_argument("--install-system-packages", action="store_true",
                     help="run apt-get for missing build.system_packages, then build.run")


def run(args: argparse.Namespace) -> int:
    store = EnvStore()
    if args.list:
        for env in store.environments():
            used = datetime.datetime.fromtimestamp(env.last_used).isoformat(timespec="seconds")
            print(f"{env.path}\t{env.info.get('model', '?')}\tlast used {used}")
        return 0
    if args.prune:
        for path in store.prune(args.days):
            print(f"removed {path}", file=sys.stderr)
        return 0
    config = load_config(args.directory)
    spec = build_spec(config)
    checked = system.check(spec)
    if args.install_system_packages:
        code = system.install(checked, str(spec.directory))
        if code != 0:
            print(f"error: a system package command failed with status {code}", file=sys.stderr)
            return 1
    else:
        for line in checked.lines():
            print(f"cogserve: {line}", file=sys.stderr)
    if not spec.needs_env:
        print(f"cogserve: {config.directory / 'cog.yaml'} declares no python_packages or "
              "python_requirements: the model runs in cogserve's own environment",
              file=sys.stderr)
        return 0
    environment = ModelEnvironment(spec, store, rebuild=args.rebuild)
    if args.remove:
        store.discard(store.path(environment.key))
        print(f"removed {store.path(environment.key)}", file=sys.stderr)
        return 0
    try:
        interrupt.run(environment.prepare(to_stderr))
    except EnvBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(environment.path)
    return 0


def to_stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()
