"""A new user's first minutes: where the server listens and when it is ready, --help with
every default, and an import error that says how to fix it, printed once."""

from __future__ import annotations

import time

from cli_harness import cogserve
from harness import write_model

OK = '''
from cog import BaseRunner


class Runner(BaseRunner):
    def run(self) -> str:
        return "ok"
'''

MISSING = '''
import notinstalledpkg_zz
from cog import BaseRunner


class Runner(BaseRunner):
    def run(self) -> str:
        return "never"
'''


def lines_with(server, text: str, want: int = 1) -> list[str]:
    """Lines of the server log that contain `text`, once `want` of them are there (or 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        found = [line for line in server.output().splitlines() if text in line]
        if len(found) >= want or time.monotonic() > deadline:
            return found


def test_serve_says_where_it_listens_and_when_it_is_ready(serve, tmp_path):
    server = serve(write_model(tmp_path / "m", OK))
    listening = lines_with(server, "listening on")
    assert len(listening) == 1 and "INFO" in listening[0]
    assert listening[0].endswith(f"listening on http://127.0.0.1:{server.port}")
    ready = lines_with(server, "model ready")
    assert len(ready) == 1 and "INFO" in ready[0]


def test_serve_help_shows_the_defaults():
    result = cogserve("serve", "--help")
    text = " ".join(result.stdout.split())
    assert "port to listen on ($PORT if set) (default: 5000)" in text
    assert "(default: 0.0.0.0)" in text
    assert "(default: None)" not in text


def test_an_undeclared_module_says_to_declare_it_once(serve, tmp_path):
    model = write_model(tmp_path / "m", MISSING)
    result = cogserve("predict", model, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        "error: run.py:2: importing run.py failed: ModuleNotFoundError: No module named "
        f"'notinstalledpkg_zz'; {model / 'cog.yaml'} does not declare it: add "
        '`- "notinstalledpkg_zz"` under build.python_packages (or a line to the '
        "build.python_requirements file) and cogserve installs it\n")
    server = serve(model, wait="SETUP_FAILED")
    assert "does not declare it" in server.health()["setup"]["logs"]
    assert len(lines_with(server, "No module named")) == 1  # printed once


def test_a_declared_module_that_is_missing_points_at_the_environment(tmp_path):
    model = write_model(tmp_path / "m", MISSING, 'run: "run.py:Runner"\nbuild:\n'
                        '  python_packages:\n    - "notinstalledpkg-zz==1.0"\n')
    result = cogserve("predict", model, "--no-env", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("No module named") == 1
    assert (f"{model / 'cog.yaml'} declares `notinstalledpkg_zz`, but it is not installed "
            "where the model runs: serve without --no-env") in result.stderr


def test_import_name_and_package_name_differ():
    import pathlib

    from cogserve.sdk.import_hints import missing_module_hint

    folder = pathlib.Path("/nonexistent-model-folder")
    assert missing_module_hint(folder, "cv2").startswith("add `opencv-python`")
    assert missing_module_hint(folder, "PIL.Image").startswith("add `pillow`")
