"""The model as its workers last reported it (at every start; `--reload` may change it):
its schema, its inputs' compiled validators, and whether each mode's output is an
iterator. The facade reads it per prediction; nothing here runs the model."""

from __future__ import annotations

from typing import Any

from cogserve.model.validation import InputValidator
from cogserve.runtime.workers import ModelInfo
from cogserve.wire.protocol import Mode


class ModelView:
    def __init__(self) -> None:
        self.info: ModelInfo | None = None  # None until a worker reported its schema
        self.validators: dict[Mode, InputValidator] = {}
        self.iterators: dict[Mode, bool] = {}  # read per prediction
        self.streaming = False  # @streaming: SSE replay (attributes: read per prediction)
        self.has_healthcheck = False

    def update(self, model: ModelInfo) -> None:
        self.info = model
        self.streaming = model.streaming
        self.has_healthcheck = model.has_healthcheck
        components = model.schema["components"]["schemas"]
        validators = {}
        if "Input" in components:  # not for a train-only model
            validators[Mode.PREDICT] = InputValidator(model.schema)
        if "TrainingInput" in components:
            validators[Mode.TRAIN] = InputValidator(model.schema, "TrainingInput")
        self.validators = validators
        self.iterators = {
            mode: components.get(name, {}).get("x-cog-array-type") == "iterator"
            for mode, name in ((Mode.PREDICT, "Output"), (Mode.TRAIN, "TrainingOutput"))}

    @property
    def schema(self) -> dict[str, Any] | None:
        return self.info.schema if self.info is not None else None

    @property
    def versions(self) -> dict[str, str]:
        return self.info.versions if self.info is not None else {}

    @property
    def descriptions(self) -> dict[str, str]:
        """The entry points' docstrings by `Mode`, as the worker reported them."""
        return self.info.descriptions if self.info is not None else {}
