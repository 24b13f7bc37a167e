"""Per-model environments (cogserve/envs): real packages from PyPI, installed by uv.

Environments go to the session's COGSERVE_ENV_DIR (conftest), built once per session and
shared by the tests here; uv keeps its own download cache, so a rerun downloads nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import zipfile

import pytest
import uv
from cli_harness import cogserve
from harness import MODELS, Server, write_model

from cogserve.envs.spec import parse_build

ENVS = MODELS / "envs"
EXAMPLE = pathlib.Path(__file__).parent.parent / "examples" / "cog-banner"
TINY_RUN = """\
import cogserve_tinypkg
from cog import BaseRunner


class Runner(BaseRunner):
    def run(self) -> str:
        return cogserve_tinypkg.VALUE
"""


def env_root() -> pathlib.Path:
    return pathlib.Path(os.environ["COGSERVE_ENV_DIR"])


def ready_envs() -> list[str]:
    root = env_root()
    return sorted(p.name for p in root.iterdir() if (p / "cogserve-env.json").is_file()) \
        if root.is_dir() else []


def leftovers() -> list[str]:
    """Anything in the store that is neither a ready environment nor what the store keeps
    beside them (the cogserve wheel, build locks, uv's scratch folder, weights views)."""
    root = env_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if p.name not in ("wheels", ".locks", ".tmp", "weights")
                  and not (p / "cogserve-env.json").is_file())


def test_env_command_builds_once_prints_the_path_and_reuses_it() -> None:
    first = cogserve("env", ENVS / "pillow10", timeout=300)
    assert first.returncode == 0, first.stderr
    path = pathlib.Path(first.stdout.strip())
    assert path.parent == env_root()
    info = json.loads((path / "cogserve-env.json").read_text())
    assert info["model"] == str(ENVS / "pillow10")
    assert (path / "bin" / "python").exists()
    again = cogserve("env", ENVS / "pillow10")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(path)
    assert "resolving" not in again.stderr  # nothing was built the second time
    assert leftovers() == []


def test_env_rebuild_remove_list_and_prune() -> None:
    built = cogserve("env", ENVS / "pillow11", timeout=300)
    assert built.returncode == 0, built.stderr
    path = pathlib.Path(built.stdout.strip())
    marker = path / "cogserve-env.json"
    before = marker.read_text()
    rebuilt = cogserve("env", ENVS / "pillow11", "--rebuild", timeout=300)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "resolving" in rebuilt.stderr
    assert rebuilt.stdout.strip() == str(path)
    assert json.loads(marker.read_text())["created_at"] > json.loads(before)["created_at"]
    listed = cogserve("env", "--list")
    assert f"{path}\t{ENVS / 'pillow11'}" in listed.stdout
    os.utime(marker, (0, 0))  # unused since 1970: --prune takes it
    pruned = cogserve("env", "--prune", "--days", "1")
    assert pruned.returncode == 0, pruned.stderr
    assert not path.exists()
    cogserve("env", ENVS / "pillow11", timeout=300)
    assert path.exists()
    removed = cogserve("env", ENVS / "pillow11", "--remove")
    assert removed.returncode == 0, removed.stderr
    assert not path.exists() and leftovers() == []


def test_env_for_a_package_that_does_not_exist_fails_with_uv_message_and_leaves_nothing() -> None:
    result = cogserve("env", ENVS / "missing_pkg", timeout=300)
    assert result.returncode == 1
    assert "cogserve-test-no-such-package-8e1f" in result.stderr
    assert "No solution found" in result.stderr  # uv's own words
    assert result.stdout == ""
    assert leftovers() == []


def _tiny_model(tmp: pathlib.Path, requirements: str) -> pathlib.Path:
    """A model folder whose requirements name the tiny local package (copied next to it)."""
    model = tmp / "model"
    shutil.copytree(ENVS / "tinypkg_src", model / "src")
    (model / "requirements.txt").write_text(requirements)
    (model / "cog.yaml").write_text('build:\n  python_requirements: "requirements.txt"\n'
                                    'run: "run.py:Runner"\n')
    (model / "run.py").write_text(TINY_RUN)
    return model


@pytest.mark.parametrize("requirements", [
    "./wheels/cogserve_tinypkg-0.1.0-py3-none-any.whl\n",
    "--find-links ./wheels\ncogserve-tinypkg==0.1.0\n",
    "--extra-index-url ./index\ncogserve-tinypkg==0.1.0\n",
], ids=["wheel-path", "find-links", "extra-index-url"])
def test_requirements_with_a_local_wheel_resolved_relative_to_the_model(
        tmp_path, requirements: str) -> None:
    model = _tiny_model(tmp_path, requirements)
    subprocess.run([uv.find_uv_bin(), "build", "--wheel", "--out-dir", str(model / "wheels"),
                    str(model / "src")], check=True, capture_output=True, timeout=120)
    shutil.rmtree(model / "src")  # only the wheel is left to install from
    project = model / "index" / "cogserve-tinypkg"  # a local package index (PEP 503 page)
    project.mkdir(parents=True)
    (project / "index.html").write_text(
        '<a href="../../wheels/cogserve_tinypkg-0.1.0-py3-none-any.whl">'
        "cogserve_tinypkg-0.1.0-py3-none-any.whl</a>\n")
    result = cogserve("predict", model, cwd=tmp_path, timeout=300)  # not the model's folder
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tiny"
    assert "Resolved" in result.stderr  # uv's progress, phase by phase, in the terminal
    assert "Installed" in result.stderr


def test_serve_reports_the_build_in_setup_logs_while_starting_then_serves(tmp_path) -> None:
    """A build held open (the local source tree's backend waits for a gate file): health
    answers STARTING with uv's output so far, predictions get 503; then it serves."""
    gate = tmp_path / "gate"
    model = _tiny_model(tmp_path, "./src\n")
    with Server(model, env={"TINYPKG_GATE": str(gate)}, wait=None) as server:
        health = _wait_for_log(server, "resolving, downloading and installing")
        assert health["status"] == "STARTING"
        assert "cogserve: creating the environment" in health["setup"]["logs"]
        assert server.predict().status_code == 503
        gate.touch()
        health = server.wait_for("READY", timeout=120)
        assert "Installed" in health["setup"]["logs"]
        response = server.predict()
        assert response.json()["output"] == "tiny", response.text
    gate.unlink()  # a second start must not build (the backend would wait for the gate)
    with Server(model, env={"TINYPKG_GATE": str(gate)}) as again:
        assert "resolving" not in again.health()["setup"]["logs"]
        assert again.predict().json()["output"] == "tiny"


def test_a_server_stopped_during_a_build_leaves_nothing_in_the_cache(tmp_path) -> None:
    gate = tmp_path / "gate"
    model = _tiny_model(tmp_path, "# a build no test completes\n./src\n")
    before = ready_envs()
    with Server(model, env={"TINYPKG_GATE": str(gate)}, wait=None) as server:
        _wait_for_log(server, "resolving, downloading and installing")
        server.process.terminate()
        assert server.process.wait(timeout=30) == 0
    assert ready_envs() == before
    assert leftovers() == []


def _wait_for_log(server: Server, text: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            health = server.health()
            if text in health["setup"]["logs"]:
                return health
        except Exception:  # not listening yet
            pass
        assert server.process.poll() is None, server.output()
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in setup.logs\n{server.output()}")


def test_serve_a_pinned_pydantic_model_returning_a_base_model_and_reuse_it() -> None:
    with Server(ENVS / "pydantic_out", timeout=300) as server:
        response = server.predict(n=3)
        assert response.json()["output"] == {"pydantic": "2.9.2", "doubled": 6}, response.text
        schema = server.client.get("/openapi.json").json()
        assert set(schema["components"]["schemas"]["Output"]["properties"]) == {
            "pydantic", "doubled"}
    started = time.monotonic()
    with Server(ENVS / "pydantic_out") as again:  # the environment is reused
        assert "resolving" not in again.health()["setup"]["logs"]
        assert again.predict(n=1).json()["output"]["doubled"] == 2
    assert time.monotonic() - started < 300  # (the condition above is the real check)


def test_two_models_with_conflicting_pins_each_see_their_own_version() -> None:
    outputs = {}
    for name in ("pillow10", "pillow11"):
        with Server(ENVS / name, timeout=300) as server:
            response = server.predict()
            assert response.status_code == 200, response.text
            outputs[name] = response.json()["output"]
            assert server.output().count("cog.yaml build keys ignored (they only apply to a "
                                         "Docker image): gpu") == 1
    assert outputs["pillow10"]["pillow"] == "10.4.0"
    assert outputs["pillow11"]["pillow"].startswith("11.")
    assert outputs["pillow10"]["prefix"] != outputs["pillow11"]["prefix"]
    for output in outputs.values():
        assert pathlib.Path(output["prefix"]).parent == env_root()
        assert output["requests"] is True  # the Cog SDK's dependency, undeclared


def test_a_package_that_does_not_exist_is_setup_failed_with_uv_message() -> None:
    with Server(ENVS / "missing_pkg", wait="SETUP_FAILED", timeout=300) as server:
        health = server.health()
        assert health["setup"]["status"] == "failed"
        logs = health["setup"]["logs"]
        assert "could not build the model's environment" in logs
        assert "cogserve-test-no-such-package-8e1f" in logs and "No solution found" in logs
        assert server.client.get("/health-check").status_code == 200  # still answering
        assert server.predict().status_code == 503
    assert leftovers() == []


def test_predict_and_schema_run_in_the_environment_and_no_env_opts_out(tmp_path) -> None:
    result = cogserve("predict", ENVS / "pillow10", timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["pillow"] == "10.4.0"
    schema = cogserve("schema", ENVS / "pillow10", timeout=300)  # imports PIL: in the env
    assert schema.returncode == 0, schema.stderr
    assert "Output" in json.loads(schema.stdout)["components"]["schemas"]
    # the same build as pillow10 (so the same environment), a model that needs nothing
    (tmp_path / "cog.yaml").write_text('build:\n  python_version: "3.11"\n'
                                       '  python_packages: ["pillow==10.4.0"]\n'
                                       'run: "run.py:run"\n')
    (tmp_path / "run.py").write_text("import sys\n\n\ndef run() -> str:\n"
                                     "    return sys.prefix\n")
    inside = cogserve("predict", tmp_path, timeout=300)
    assert pathlib.Path(inside.stdout.strip()).parent == env_root(), inside.stderr
    (tmp_path / "cog.yaml").write_text((tmp_path / "cog.yaml").read_text()
                                       + 'train: "run.py:run"\n')
    trained = cogserve("train", tmp_path, cwd=tmp_path, timeout=300)  # in the env too
    assert trained.returncode == 0, trained.stderr
    assert pathlib.Path((tmp_path / "weights").read_text()).parent == env_root()  # as cog
    for args, env in ((["--no-env"], {}), ([], {"COGSERVE_NO_ENV": "1"})):
        own = cogserve("predict", tmp_path, *args, env=env)
        assert own.returncode == 0, own.stderr
        assert own.stdout.strip() == sys.prefix  # cogserve's own Python


def test_a_pin_that_conflicts_with_the_worker_names_both_requirements(tmp_path) -> None:
    (tmp_path / "cog.yaml").write_text('build:\n  python_packages: ["orjson==3.9.0"]\n'
                                       'run: "run.py:Runner"\n')
    result = cogserve("env", tmp_path, timeout=300)
    assert result.returncode == 1
    assert ("the model's requirement 'orjson==3.9.0' conflicts with 'orjson>=3.10', which "
            "cogserve's worker needs") in result.stderr
    assert leftovers() == []


def test_python_version_without_an_interpreter_falls_back_with_one_line(tmp_path) -> None:
    (tmp_path / "cog.yaml").write_text('build:\n  python_version: "3.99"\n'
                                       '  python_packages: ["pillow==10.4.0"]\n'
                                       'run: "run.py:Runner"\n')
    result = cogserve("env", tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("build.python_version 3.99: no such interpreter") == 1
    assert "using cogserve's own Python" in result.stderr
    cogserve("env", tmp_path, "--remove")


def test_system_packages_are_checked_and_the_install_command_printed(tmp_path) -> None:
    (tmp_path / "cog.yaml").write_text(
        'build:\n  system_packages: ["coreutils", "cogserve-test-no-such-deb"]\n'
        '  run: ["echo hi"]\n  cuda: "12.1"\nrun: "run.py:Runner"\n')
    result = cogserve("env", tmp_path)
    assert result.returncode == 0, result.stderr
    if shutil.which("dpkg-query") is None:
        pytest.skip("not a Debian system")
    assert ("build.system_packages not installed: cogserve-test-no-such-deb; install them "
            "with: ") in result.stderr
    assert "apt-get install -y --no-install-recommends cogserve-test-no-such-deb\n" \
        in result.stderr
    assert "build.run is not run by cogserve: echo hi" in result.stderr
    assert "declares no python_packages" in result.stderr and result.stdout == ""


def test_the_key_follows_everything_that_decides_the_environment(tmp_path) -> None:
    (tmp_path / "req.txt").write_text("pillow==10.4.0\n")
    base = {"python_requirements": "req.txt", "python_version": "3.11"}
    key = parse_build(tmp_path, base).key("0.1.0+a")
    assert parse_build(tmp_path, {**base, "gpu": True}).key("0.1.0+a") == key
    assert parse_build(tmp_path, base).key("0.1.0+b") != key  # another cogserve
    assert parse_build(tmp_path, {**base, "python_version": "3.12"}).key("0.1.0+a") != key
    (tmp_path / "req.txt").write_text("pillow==11.0.0\n")
    assert parse_build(tmp_path, base).key("0.1.0+a") != key
    with pytest.raises(Exception, match="only one of python_packages or python_requirements"):
        parse_build(tmp_path, {**base, "python_packages": ["x"]})


def test_the_readme_example_with_a_requirements_file_runs_with_one_command(tmp_path) -> None:
    out = tmp_path / "banner.png"
    result = cogserve("predict", EXAMPLE, "-i", "text=hello", "-o", out, timeout=300)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_install_system_packages_runs_the_build_run_commands(tmp_path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "cog.yaml").write_text(
        f'build:\n  run:\n    - command: "touch {marker}"\nrun: "run.py:Runner"\n')
    printed = cogserve("env", tmp_path)
    assert f"build.run is not run by cogserve: touch {marker}" in printed.stderr
    assert not marker.exists()
    result = cogserve("env", tmp_path, "--install-system-packages")
    assert result.returncode == 0, result.stderr
    assert f"cogserve: running: touch {marker}" in result.stdout
    assert marker.exists()


def test_two_processes_building_one_environment_build_it_once(tmp_path) -> None:
    gate = tmp_path / "gate"
    model = _tiny_model(tmp_path, "# built by one of two processes\n./src\n")
    env = {**os.environ, "TINYPKG_GATE": str(gate)}
    argv = [sys.executable, "-m", "cogserve.cli", "env", str(model)]
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    procs = []
    try:
        for log in logs:
            with open(log, "w") as fh:
                procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                              stderr=fh, text=True, start_new_session=True))
            if log == logs[0]:
                _wait_for_text(log, "resolving, downloading and installing")
        _wait_for_text(logs[1], "waiting for another process")
        gate.touch()
        paths = [p.communicate(timeout=120)[0].strip() for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    assert [p.returncode for p in procs] == [0, 0]
    assert paths[0] == paths[1] and pathlib.Path(paths[0]).parent == env_root()
    assert "resolving" not in logs[1].read_text()  # the second one built nothing
    assert leftovers() == []


def _wait_for_text(path: pathlib.Path, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text():
        assert time.monotonic() < deadline, f"{text!r} never appeared in {path.read_text()}"
        time.sleep(0.05)


def test_a_model_declaring_no_packages_imports_the_cog_sdk_dependencies(tmp_path) -> None:
    """A Cog image holds cog's own requirements; published models import them undeclared.
    With no packages declared the model runs in cogserve's own Python, which carries them."""
    (tmp_path / "cog.yaml").write_text('run: "run.py:run"\n')
    (tmp_path / "run.py").write_text(
        "import sys\n\nimport requests\nimport structlog\nimport typing_extensions\n"
        "import yaml\n\n\ndef run() -> str:\n"
        "    return sys.prefix + ' ' + requests.__name__ + structlog.__name__\n")
    result = cogserve("predict", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{sys.prefix} requestsstructlog"


RUNNING = sys.version.split()[0]


def _old_python_model(tmp: pathlib.Path, version: str, requirements: str | None) -> pathlib.Path:
    """A model declaring a Python older than cogserve runs a model on, as published Cog
    models do; with `requirements`, a requirements.txt naming local wheels in ./wheels."""
    model = tmp / f"py{version}"
    build = f'  python_version: "{version}"\n'
    if requirements is not None:
        build += '  python_requirements: "requirements.txt"\n'
        (model / "wheels").mkdir(parents=True)
        (model / "requirements.txt").write_text(requirements)
    write_model(model, TINY_RUN if requirements else
                "import sys\n\ndef run(text: str = 'x') -> str:\n"
                "    return text + ' ' + '.'.join(map(str, sys.version_info[:2]))\n",
                cog_yaml=f"build:\n{build}run: \"run.py:{'Runner' if requirements else 'run'}\"\n")
    return model


def _warning(version: str) -> str:
    return (f"cog.yaml declares python_version {version}, older than cogserve runs a model on "
            f"(3.11+): serving it on Python {RUNNING}")


def test_python_38_with_requirements_is_served_on_cogserves_python_with_one_warning(
        tmp_path) -> None:
    model = _old_python_model(tmp_path, "3.8", "./wheels/cogserve_tinypkg-0.1.0-py3-none-any.whl\n")
    subprocess.run([uv.find_uv_bin(), "build", "--wheel", "--out-dir", str(model / "wheels"),
                    str(ENVS / "tinypkg_src")], check=True, capture_output=True, timeout=120)
    result = cogserve("predict", model, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tiny"
    assert result.stderr.count(_warning("3.8")) == 1, result.stderr
    # the environment is made with a Python the worker runs on, and says which
    assert (f"creating the environment with Python {RUNNING} ({sys.executable}), in place of "
            "the declared python_version 3.8") in result.stderr
    with Server(model) as server:
        response = server.predict()
        assert response.json()["output"] == "tiny", response.text
        assert server.output().count(_warning("3.8")) == 1, server.output()


def test_python_39_without_packages_is_served_on_cogserves_python_with_one_warning(
        tmp_path) -> None:
    model = _old_python_model(tmp_path, "3.9", None)
    result = cogserve("predict", model, "-i", "text=hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"hello {sys.version_info[0]}.{sys.version_info[1]}"
    assert result.stderr.count(_warning("3.9")) == 1, result.stderr
    with Server(model) as server:
        response = server.predict(text="hi")
        assert response.json()["output"] == f"hi {sys.version_info[0]}.{sys.version_info[1]}"
        assert server.output().count(_warning("3.9")) == 1, server.output()


def _wheel(folder: pathlib.Path, name: str, python_tag: str) -> pathlib.Path:
    """A one-module wheel built for `python_tag` only (e.g. cp38: CPython 3.8)."""
    info = f"{name}-0.1.0.dist-info"
    files = {f"{name}.py": b"VALUE = 1\n",
             f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\n"
                                  "Version: 0.1.0\n").encode(),
             f"{info}/WHEEL": ("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                               f"Tag: {python_tag}-none-any\n").encode()}

    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = [f"{path},sha256={digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join(record) + f"\n{info}/RECORD,,\n").encode()
    wheel = folder / f"{name}-0.1.0-{python_tag}-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def test_a_package_only_for_the_declared_old_python_fails_naming_it(tmp_path) -> None:
    model = _old_python_model(tmp_path, "3.8", "--find-links ./wheels\ncogserve-py38only\n")
    _wheel(model / "wheels", "cogserve_py38only", "cp38")
    result = cogserve("env", model, timeout=300)
    assert result.returncode == 1
    assert (f"(cog.yaml declares python_version 3.8; the environment uses Python {RUNNING})"
            in result.stderr), result.stderr
    assert "No solution found" in result.stderr  # uv's own words, naming the package
    assert "cogserve-py38only" in result.stderr
    assert leftovers() == []
