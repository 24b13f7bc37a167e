"""Metric labels and access-log paths are route templates: a small fixed set, never ids."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from cogserve.assembly import build_app, wire
from cogserve.http.app import App
from cogserve.model.config import ModelConfig
from cogserve.runtime.service import Service
from cogserve.runtime.settings import Settings


@pytest.fixture
def app(tmp_path: pathlib.Path) -> Iterator[App]:
    config = ModelConfig(directory=tmp_path, predict_ref="run.py:Runner",
                         train_ref="train.py:train")
    service = Service(config, Settings())
    app = build_app(wire(service), max_body=1024, on_shutdown=lambda: None)
    yield app
    service.remove_folders()


@pytest.mark.parametrize(("path", "template"), [
    ("/predictions", "/predictions"),
    ("/mcp", "/mcp"),
    ("/predictions/abc", "/predictions/{prediction_id}"),
    ("/predictions/abc/cancel", "/predictions/{prediction_id}/cancel"),
    ("/predictions/abc/other", "other"),
    ("/trainings/t1", "/trainings/{training_id}"),
    ("/trainings/t1/cancel", "/trainings/{training_id}/cancel"),
    ("/docs", "/docs"),
    ("/docs/app.js", "/docs/{file}"),
    ("/metrics", "/metrics"),
    ("/health-check", "/health-check"),
    ("/v2", "/v2"),
    ("/v2/health/ready", "/v2/health/ready"),
    ("/v2/models/m", "/v2/models/{model_name}"),
    ("/v2/models/m/infer", "/v2/models/{model_name}/infer"),
    ("/v2/models/m/versions/3/ready", "/v2/models/{model_name}/versions/{model_version}/ready"),
    ("/v2/models/m/x", "other"),
    ("/anything/else", "other"),
    # the edges, as the prefix router answered them before routes became a table
    ("/predictions/", "other"),
    ("/predictions/abc/", "/predictions/{prediction_id}"),
    ("/predictions/abc/cancel/", "other"),
    ("/predictions//cancel", "other"),
    ("/docs/", "/docs/{file}"),
    ("/docs/a/b", "/docs/{file}"),
    ("/playground", "/playground"),
    ("/playground/", "other"),
    ("/v2/", "/v2"),
    ("/v2x", "other"),
    ("/v2//health//live", "/v2/health/live"),
    ("/v2/health/x", "other"),
    ("/v2/models/m/", "/v2/models/{model_name}"),
    ("/v2/models/m/versions", "other"),
    ("/v2/models/m/versions/3", "/v2/models/{model_name}/versions/{model_version}"),
    ("/v2/models/m/versions/3/infer", "/v2/models/{model_name}/versions/{model_version}/infer"),
    ("/v2/models/m/ready/x", "other"),
])
def test_route_of(app: App, path: str, template: str) -> None:
    assert app.match(path).template == template
