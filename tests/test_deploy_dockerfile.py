"""`cogserve dockerfile`: valid Dockerfile syntax (a real parser), its RUN steps work when
run directly in a fresh virtual environment, and its entrypoint and HEALTHCHECK serve.

There is no Docker here: the image's filesystem is played by a temporary folder, `/src`
by a copy of the model folder, and `pip` by the fresh venv's installer.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import httpx
import pytest
from dockerfile_parse import DockerfileParser
from harness import free_port, write_model
from uv import find_uv_bin

from cogserve.envs import certs

REPO = pathlib.Path(__file__).resolve().parent.parent

MODEL = """
import six  # only in the model's environment, which the Dockerfile builds
from cog import BaseRunner

class Runner(BaseRunner):
    def run(self, name: str = "you") -> str:
        return six.ensure_str(f"hello {name}")
"""
COG_YAML = """\
run: "run.py:Runner"
build:
  python_version: "3.11"
  python_requirements: requirements.txt
"""


def dockerfile(directory: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogserve.cli", "dockerfile", str(directory),
                           *args], capture_output=True, text=True, timeout=60)


def parsed(directory: pathlib.Path) -> DockerfileParser:
    parser = DockerfileParser(path=str(directory / "Dockerfile"))
    assert parser.structure, "the parser found no instructions"
    return parser


@pytest.fixture
def model(tmp_path: pathlib.Path) -> pathlib.Path:
    folder = write_model(tmp_path / "hello", MODEL, COG_YAML)
    (folder / "requirements.txt").write_text("# the model's own pins\nsix==1.17.0\n")
    return folder


def test_dockerfile_is_valid_and_has_what_the_image_needs(model):
    result = dockerfile(model)
    assert result.returncode == 0, result.stderr
    assert (model / ".dockerignore").read_text().splitlines()[1:3] == [".git", ".cog"]
    parser = parsed(model)
    instructions = [i["instruction"] for i in parser.structure]
    assert parser.baseimage == "python:3.11-slim"
    assert instructions.count("USER") == 1
    user = next(i["value"] for i in parser.structure if i["instruction"] == "USER")
    assert user == "10001"
    # as the app user, only the model's environment is built (cogserve env, issue #18)
    after_user = parser.structure[instructions.index("USER"):]
    assert [i["value"] for i in after_user if i["instruction"] == "RUN"] == [
        "cogserve env /src"]
    copies = [i["value"] for i in after_user if i["instruction"] == "COPY"]
    assert copies[:2] == ["--chown=10001:10001 cog.yaml /src/cog.yaml",
                          "--chown=10001:10001 requirements.txt /src/requirements.txt"]
    entrypoint = next(i["value"] for i in parser.structure if i["instruction"] == "ENTRYPOINT")
    assert json.loads(entrypoint) == ["cogserve", "serve", "/src"]  # exec form: PID 1
    assert parser.envs["PORT"] == "5000"
    assert "HEALTHCHECK" in instructions and "STOPSIGNAL" in instructions
    # refuses to overwrite, unless asked
    again = dockerfile(model)
    assert again.returncode == 1 and "--force" in again.stderr
    assert dockerfile(model, "--force", "--port", "8080").returncode == 0
    assert parsed(model).envs["PORT"] == "8080"


def test_bad_build_section_is_a_clear_error(tmp_path):
    folder = write_model(tmp_path / "bad", MODEL,
                         'run: "run.py:Runner"\nbuild:\n  python_requirements: nope.txt\n')
    result = dockerfile(folder)
    assert result.returncode == 1
    assert "python_requirements: no such file 'nope.txt'" in result.stderr
    assert not (folder / "Dockerfile").exists()


def test_run_steps_work_in_a_fresh_venv_and_the_entrypoint_serves(model, tmp_path):
    assert dockerfile(model, "--cogserve-requirement", str(REPO)).returncode == 0
    parser = parsed(model)
    image = tmp_path / "image"
    src = image / "src"

    def in_image(text: str) -> str:  # the image's absolute paths, under the temp root
        return text.replace("/src", str(src)).replace("/opt/cogserve", str(image / "opt"))

    shutil.copytree(model, src)  # the COPY steps
    venv = image / "venv"
    uv = find_uv_bin()  # a cogserve dependency
    scratch = image / "tmp"  # the installer's lock and build files go with the test
    scratch.mkdir(parents=True)
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True, timeout=60,
                   env={**os.environ, "TMPDIR": str(scratch)})
    shims = image / "shims"
    shims.mkdir()
    # `pip` in the image's RUN lines is the fresh venv's installer: uv's pip, for speed,
    # with its cache (an image build has none; the test need not download again)
    (shims / "pip").write_text(
        "#!/bin/sh\n"
        'for a; do shift; [ "$a" = --no-cache-dir ] || set -- "$@" "$a"; done\n'
        f'exec {uv} pip "$@" --python {venv}/bin/python\n')
    (shims / "pip").chmod(0o755)
    # uv trusts what pip trusts (the system's store), as cogserve's own builds tell it to
    with certs.for_build() as trust:
        uv_trust = trust.env
    env = {**os.environ, **{k: in_image(v) for k, v in parser.envs.items()}, **uv_trust,
           "PATH": f"{shims}:{venv}/bin:{os.environ['PATH']}",
           "COGSERVE_REQUIREMENT": str(REPO), "TMPDIR": str(scratch)}
    env.pop("VIRTUAL_ENV", None)
    ran = 0
    for item in parser.structure:
        if item["instruction"] != "RUN":
            continue
        command = in_image(item["value"])
        if command.startswith("useradd "):  # makes the user (root only); the folder it owns:
            (image / "opt" / "envs").mkdir(parents=True)
            continue
        result = subprocess.run(["sh", "-c", command], env=env, cwd=src, capture_output=True,
                                text=True, timeout=240)
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        ran += 1
    assert ran == 2  # cogserve, then the model's environment (`cogserve env`)
    (model_env,) = (image / "opt" / "envs").glob("[0-9a-f]*")
    check = subprocess.run([f"{model_env}/bin/python", "-c", "import six"], timeout=60)
    assert check.returncode == 0

    port = free_port()
    env["PORT"] = str(port)
    entrypoint = [in_image(a) for a in json.loads(
        next(i["value"] for i in parser.structure if i["instruction"] == "ENTRYPOINT"))]
    entrypoint[0] = str(venv / "bin" / entrypoint[0])
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(entrypoint, env=env, cwd=src, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        healthcheck = next(i["value"] for i in parser.structure
                           if i["instruction"] == "HEALTHCHECK")
        probe = json.loads(healthcheck.split(" CMD ", 1)[1])
        probe[0] = str(venv / "bin" / probe[0])
        deadline = time.monotonic() + 60
        while subprocess.run(probe, env=env, capture_output=True, timeout=30).returncode != 0:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        r = httpx.post(f"http://127.0.0.1:{port}/predictions",
                       json={"input": {"name": "docker"}}, timeout=30)
        assert r.json()["output"] == "hello docker"
        server.send_signal(signal.SIGTERM)  # what `docker stop` sends (STOPSIGNAL)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


@pytest.mark.parametrize("declared,base", [("3.12", "python:3.12-slim"),
                                           ("3.8", "python:3.11-slim")])
def test_a_python_older_than_cogserve_runs_on_gets_the_default_base_image(
        tmp_path, declared, base):
    folder = write_model(tmp_path / f"py{declared}", MODEL,
                         f'run: "run.py:Runner"\nbuild:\n  python_version: "{declared}"\n')
    assert dockerfile(folder).returncode == 0
    assert parsed(folder).baseimage == base
