"""Which OpenAI routes a model answers, read from its OpenAPI schema: its *shape*.

A language model has a text `prompt` (or a `messages`) input and text output (a `str`,
or an iterator or list of `str`, `ConcatenateIterator[str]` as Replicate's hosted
language models yield); an image model has a text `prompt` and one file (`Path`) or a
list of them as output. Anything else fits neither, and every /v1 route answers 404
saying why.

The request fields reach the model's inputs by name: each OpenAI field has the input
names it maps to, in order, as published Cog models spell them (`NAMES`); the first the
model has wins. A model author can name them instead, in cog.yaml:

    openai:
      shape: language        # language | image | none (none: no /v1 routes)
      inputs:                # OpenAI field -> the model's input
        max_tokens: length

Plain data and pure functions, unit tested in-process (tests/unit/test_openai_shapes.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cogserve.mcp.tools import resolve


class Shape(StrEnum):
    LANGUAGE = "language"
    IMAGE = "image"
    NONE = "none"


class Field(StrEnum):
    """The request fields that map onto a model input (the README's tables)."""

    PROMPT = "prompt"
    MESSAGES = "messages"
    SYSTEM_PROMPT = "system_prompt"
    MAX_TOKENS = "max_tokens"
    TEMPERATURE = "temperature"
    TOP_P = "top_p"
    TOP_K = "top_k"
    STOP = "stop"
    SEED = "seed"
    PRESENCE_PENALTY = "presence_penalty"
    FREQUENCY_PENALTY = "frequency_penalty"
    N = "n"
    WIDTH = "width"
    HEIGHT = "height"
    ASPECT_RATIO = "aspect_ratio"


# each field's input names in published Cog models, the first found wins
NAMES: dict[Field, tuple[str, ...]] = {
    Field.PROMPT: ("prompt",),
    Field.MESSAGES: ("messages",),
    Field.SYSTEM_PROMPT: ("system_prompt", "system_message", "system"),
    Field.MAX_TOKENS: ("max_tokens", "max_new_tokens", "max_length", "max_output_tokens"),
    Field.TEMPERATURE: ("temperature",),
    Field.TOP_P: ("top_p",),
    Field.TOP_K: ("top_k",),
    Field.STOP: ("stop_sequences", "stop", "stop_sequence"),
    Field.SEED: ("seed",),
    Field.PRESENCE_PENALTY: ("presence_penalty",),
    Field.FREQUENCY_PENALTY: ("frequency_penalty",),
    Field.N: ("num_outputs", "num_images", "n"),
    Field.WIDTH: ("width",),
    Field.HEIGHT: ("height",),
    Field.ASPECT_RATIO: ("aspect_ratio",),
}


class OverrideError(ValueError):
    """cog.yaml's `openai:` is not what this module reads; the message names the key."""


@dataclass(frozen=True)
class Model:
    """A model as the /v1 routes see it."""

    name: str
    shape: Shape
    why: str  # for NONE: why it fits neither shape
    inputs: dict[Field, str] = field(default_factory=dict)  # field -> the model's input
    properties: dict[str, Any] = field(default_factory=dict)  # input -> its schema
    output: dict[str, Any] = field(default_factory=dict)  # the output's schema

    def input(self, name: Field) -> str | None:
        return self.inputs.get(name)

    def is_array(self, name: Field) -> bool:
        """The model's input for `name` takes a list."""
        target = self.inputs.get(name)
        return target is not None and self.properties[target].get("type") == "array"

    def choices(self, name: Field) -> list[Any] | None:
        """The allowed values of the model's input for `name`, if it has a fixed set."""
        target = self.inputs.get(name)
        if target is None:
            return None
        schema = self.properties[target]
        enum = schema.get("enum")
        for part in schema.get("allOf", ()):
            enum = enum or part.get("enum")
        return list(enum) if enum else None


def read(schema: dict[str, Any], name: str, override: Any = None) -> Model:
    """The model's shape and field mapping (`override`: cog.yaml's `openai:` as written;
    raises OverrideError when it is malformed)."""
    components = schema["components"]["schemas"]
    if "Input" not in components:
        return Model(name, Shape.NONE, "the model has no run() (a train-only model)")
    properties = resolve(components["Input"], components).get("properties", {})
    output = resolve(components.get("Output", {}), components)
    wanted, names = _override(override)
    inputs: dict[Field, str] = {}
    for key, candidates in NAMES.items():
        chosen = names.get(key)
        if chosen is not None:
            if chosen not in properties:
                raise OverrideError(f"cog.yaml openai.inputs.{key}: the model has no input "
                                    f"{chosen!r} (it has {', '.join(sorted(properties))})")
            inputs[key] = chosen
            continue
        found = next((c for c in candidates if c in properties), None)
        if found is not None:
            inputs[key] = found
    shape, why = _shape(inputs, properties, output)
    if wanted is not None:
        shape, why = wanted, ("cog.yaml says `openai: {shape: none}`"
                              if wanted is Shape.NONE else "")
    return Model(name, shape, why, inputs, properties, output)


def _shape(inputs: dict[Field, str], properties: dict[str, Any],
           output: dict[str, Any]) -> tuple[Shape, str]:
    prompt = inputs.get(Field.PROMPT)
    text_prompt = prompt is not None and properties[prompt].get("type") == "string"
    if _is_text(output) and (text_prompt or Field.MESSAGES in inputs):
        return Shape.LANGUAGE, ""
    if _is_files(output) and text_prompt:
        return Shape.IMAGE, ""
    if not text_prompt and Field.MESSAGES not in inputs:
        return Shape.NONE, ("the model has no text input named prompt (or messages); "
                            f"its inputs are {', '.join(sorted(properties)) or 'none'}")
    return Shape.NONE, ("its output is neither text (str, or an iterator or list of str) "
                        "nor files (Path, or a list of Path)")


def _is_text(output: dict[str, Any]) -> bool:
    if output.get("type") == "string":
        return output.get("format") != "uri"
    items = output.get("items", {})
    return output.get("type") == "array" and items.get("type") == "string" \
        and items.get("format") != "uri"


def _is_files(output: dict[str, Any]) -> bool:
    if output.get("type") == "array":
        output = output.get("items", {})
    return output.get("type") == "string" and output.get("format") == "uri"


def _override(raw: Any) -> tuple[Shape | None, dict[Field, str]]:
    """cog.yaml's `openai:`: a shape to force (None: read from the schema) and the
    inputs named for fields."""
    if raw is None:
        return None, {}
    if not isinstance(raw, dict):
        raise OverrideError("cog.yaml `openai:` must be a mapping (shape:, inputs:)")
    unknown = set(raw) - {"shape", "inputs"}
    if unknown:
        raise OverrideError(f"cog.yaml openai: unknown key {sorted(unknown)[0]!r} "
                            "(it takes shape: and inputs:)")
    shape = raw.get("shape")
    if shape is not None and shape not in set(Shape):
        raise OverrideError(f"cog.yaml openai.shape must be one of "
                            f"{', '.join(Shape)}, not {shape!r}")
    inputs = raw.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise OverrideError("cog.yaml openai.inputs must map OpenAI fields to input names")
    names: dict[Field, str] = {}
    for key, value in inputs.items():
        if key not in set(Field):
            raise OverrideError(f"cog.yaml openai.inputs: unknown field {key!r} (one of "
                                f"{', '.join(Field)})")
        if not isinstance(value, str):
            raise OverrideError(f"cog.yaml openai.inputs.{key} must be an input's name")
        names[Field(key)] = value
    return (Shape(shape) if shape is not None else None), names
