"""A large JSON body costs the parent a bounded number of copies (issue 13, defect 9).

The parent reads the body, parses it and, for an input over the spill threshold,
re-encodes it to a file for the worker. The raw bytes are dropped once parsed, so at
most two copies are alive at once (the parsed document and one encoding of it).
Asserted on the parent's peak resident memory (VmHWM), not on time; and what the model
receives, through a frame and through a file, is what the client sent.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

import httpx
import pytest
from harness import Server, write_model

MIB = 1 << 20
BODY_MIB = 40


def peak_mib(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_big_body_peaks_at_two_copies_in_the_parent(tmp_path: pathlib.Path) -> None:
    model = write_model(tmp_path, "from cog import BaseRunner\n\n\n"
                                  "class Runner(BaseRunner):\n"
                                  "    def run(self, text: str) -> int:\n"
                                  "        return len(text)\n")
    body = json.dumps({"input": {"text": "a" * (BODY_MIB * MIB)}}).encode()
    with Server(model, "--max-body-bytes", str(2 * BODY_MIB * MIB)) as server:
        server.wait_for("READY")
        before = peak_mib(server.pid)
        r = httpx.post(server.url + "/predictions", content=body, timeout=120,
                       headers={"content-type": "application/json"})
        assert r.status_code == 200 and r.json()["output"] == BODY_MIB * MIB
        # three copies (raw bytes kept until the spill) would be 120 MiB
        assert peak_mib(server.pid) - before < 2.5 * BODY_MIB


ECHO_MODEL = """from cog import BaseRunner
import hashlib


class Runner(BaseRunner):
    def run(self, text: str, tags: str = "[]") -> str:
        return hashlib.sha256(text.encode()).hexdigest() + " " + tags
"""


@pytest.mark.parametrize("mib", [2, 8])  # under the spill threshold (a frame), over it (a file)
def test_a_big_input_reaches_the_model_as_the_client_wrote_it(tmp_path: pathlib.Path,
                                                               mib: int) -> None:
    # escapes, non-ASCII and spacing in the client's text: the model must get the value
    text = ("é\"\\\n\u2603 " * (mib * MIB // 8))[: mib * MIB]
    body = ('{ "input" : {"text": ' + json.dumps(text) + ',  "tags": "[1, 2]"}, '
            f'"id": "big{mib}" }}').encode()
    assert len(body) > mib * MIB
    with Server(write_model(tmp_path, ECHO_MODEL)) as server:
        server.wait_for("READY")
        r = httpx.post(server.url + "/predictions", content=body, timeout=120,
                       headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text[:300]
        answer = r.json()
        assert answer["id"] == f"big{mib}"
        assert answer["output"] == hashlib.sha256(text.encode()).hexdigest() + " [1, 2]"
        assert answer["input"] == {"text": text, "tags": "[1, 2]"}
