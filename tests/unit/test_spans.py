"""When tracing is on: only when the OTEL_* variables ask for it and the extra is installed."""

from __future__ import annotations

import importlib.util
import logging

import pytest

from cogserve.process import spans


@pytest.fixture(autouse=True)
def no_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)


def test_off_without_variables() -> None:
    assert spans.wanted() is False


@pytest.mark.parametrize("name", ["OTEL_EXPORTER_OTLP_ENDPOINT",
                                  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
def test_on_with_an_endpoint(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "http://127.0.0.1:4318")
    assert spans.wanted() is True


def test_off_when_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert spans.wanted() is False
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert spans.wanted() is False


def test_asked_for_but_not_installed_is_a_warning_and_off(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    real = importlib.util.find_spec

    def without_exporter(name: str, *args: object) -> object:
        return None if name.startswith("opentelemetry.exporter") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_exporter)
    logger = logging.getLogger("cogserve")
    monkeypatch.setattr(logger, "propagate", True)
    with caplog.at_level(logging.WARNING, logger="cogserve"):
        assert spans.wanted() is False
    assert "pip install 'cogserve[otel]'" in caplog.text
    # the console exporter needs only the SDK
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert spans.wanted() is True
