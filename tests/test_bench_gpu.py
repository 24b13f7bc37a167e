"""bench/gpu: the plan a GPU session runs and the check every answer passes.

The scenario itself needs a GPU (or `bench/gpu/run --smoke`, minutes); these pin the
things a GPU session cannot fix afterwards: that the plan covers what issue 35 asks
(every system at 1, 2 and 4 workers, 1 to 128 clients, the reference, the multipart
uploads), that the multipart body is a form cogserve reads as the JPEG, and that a wrong
answer is caught rather than counted.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.gpu import measure  # noqa: E402


def test_the_gpu_plan_covers_every_system_worker_count_and_client_count() -> None:
    plan = measure.configs(smoke=False, workers=None, systems=None)
    cells = {(c.system, c.workers) for c in plan}
    for system in (measure.BATCHED, measure.LITSERVE, measure.PLAIN):
        assert {(system, n) for n in (1, 2, 4)} <= cells
    assert (measure.REFERENCE, 1) in cells
    clients = {n for c in plan for n in c.clients}
    assert {1, 32, 64, 128} <= clients
    assert plan[0].system == measure.BATCHED and plan[0].workers == 1  # the first measured
    only = measure.configs(smoke=False, workers=[2], systems=["litserve"])
    assert [(c.system, c.workers, c.body) for c in only] == [
        (measure.LITSERVE, 2, measure.DATA_URL), (measure.LITSERVE, 2, measure.MULTIPART)]


def test_the_multipart_uploads_come_after_the_data_url_plan_and_are_picked_by_body() -> None:
    plan = measure.configs(smoke=False, workers=None, systems=None)
    reference = next(i for i, c in enumerate(plan) if c.system == measure.REFERENCE)
    forms = [c for c in plan if c.body == measure.MULTIPART]
    assert forms == plan[reference + 1:]  # a run short of time loses these first
    assert {(c.system, c.workers) for c in forms} == {
        (s, n) for s in (measure.BATCHED, measure.LITSERVE) for n in (1, 4)}
    assert all({32, 64, 128} <= set(c.clients) for c in forms)
    assert forms[0].name == "cogserve @batch, multipart"
    # the data URL's plan is as it was: every system, 1, 2 and 4 workers, the reference
    assert len([c for c in plan if c.body == measure.DATA_URL]) == 10
    picked = measure.configs(smoke=False, workers=None, systems=["multipart"])
    assert picked == forms
    smoke = measure.configs(smoke=True, workers=None, systems=None)
    assert {c.system for c in smoke if c.body == measure.MULTIPART} == {
        measure.BATCHED, measure.LITSERVE}


def test_the_multipart_body_is_a_form_cogserve_reads_as_the_jpeg() -> None:
    from cogserve.http import form_document
    from cogserve.model.validation import InputValidator

    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 40 + b"\r\n--\r\n\xff\xd9"
    body = measure.multipart_body(jpeg)
    content_type = measure.FORM["Content-Type"]
    # the form as a generic MIME reader sees it: one file part, named as curl -F names it
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    (part,) = message.iter_parts()
    assert part.get_param("name", header="content-disposition") == "image"
    assert part.get_filename() == "image.jpg" and part.get_content_type() == "image/jpeg"
    assert part.get_payload(decode=True) == jpeg
    # and as cogserve reads it for the model's `Path` input: the JPEG's data URL
    schema = {"components": {"schemas": {"Input": {
        "type": "object", "required": ["image"],
        "properties": {"image": {"type": "string", "format": "uri", "title": "Image"}}}}}}
    form = form_document.form_of(content_type.encode())
    assert form is not None and form.boundary == measure.BOUNDARY
    values, errors = form_document.inputs(body, form, InputValidator(schema))
    assert errors == []
    assert values == {"image": "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()}
    with pytest.raises(ValueError):
        measure.multipart_body(b"\xff\xd8" + measure.BOUNDARY.encode())


def test_an_answer_that_is_not_a_top5_is_refused() -> None:
    good = {"classes": [3, 1, 4, 1, 5], "probabilities": [0.5, 0.2, 0.1, 0.1, 0.05]}
    assert measure.check_top5(good, "x") == [3, 1, 4, 1, 5]
    for bad in ({"classes": [3, 1, 4, 1], "probabilities": [0.5, 0.2, 0.1, 0.1]},
                {"classes": [3, 1, 4, 1, 1000], "probabilities": good["probabilities"]},
                {"classes": good["classes"], "probabilities": [0.1, 0.2, 0.1, 0.1, 0.05]},
                [3, 1, 4, 1, 5]):
        with pytest.raises(measure.CheckError):
            measure.check_top5(bad, "x")


def test_the_table_says_nvml_was_absent_rather_than_zero() -> None:
    point = measure.Point(measure.BATCHED, 1, 32, 400.0, 70.0, 90.0, 0, 0, None, None, None,
                          [], 0.2, 1.1)
    table = measure.render([point], {"ceiling": {"batch 32, decode excluded": 3000.0}})
    row = next(line for line in table.splitlines() if line.startswith("| cogserve @batch"))
    assert "| n/a |" in row and "| 400 |" in row
    assert row.startswith("| cogserve @batch | data URL | 1 | 32 |")
    form = measure.Point(measure.LITSERVE, 4, 64, 300.0, 80.0, 99.0, 0, 0, None, None, None,
                         [], 0.0, 5.0, body=measure.MULTIPART)
    assert "| LitServe, batching | multipart | 4 | 64 | 300 |" in measure.render([form], {})
    assert "batch 32, decode excluded: 3,000.0" in table
