"""Every scenario `bench/run` knows, in the order it runs them and numbers them in
bench/RESULTS.md. Apart from bench/scenarios.py so that scenarios in modules of their
own (the soak) import the base classes from there without a circle."""

from __future__ import annotations

from bench.scenarios import (
    AsyncSlots,
    ColdStart,
    ColdStartEnv,
    CPUPool,
    FileDataURL,
    FileUpload,
    ImageDecode,
    ImageDecode64,
    ImageForm,
    ImageOneClient,
    ImageWait,
    LargeInput,
    MLPBatch,
    NoopConcurrent,
    NoopSequential,
    OpenAIStream,
    Scenario,
    SSETokens,
    V2Binary,
    V2Json,
)
from bench.soak import Soak

ALL: tuple[Scenario, ...] = (
    NoopSequential(), NoopConcurrent(), AsyncSlots(), SSETokens(), OpenAIStream(),
    FileDataURL(), FileUpload(), LargeInput(), ColdStart(), ColdStartEnv(), V2Json(),
    V2Binary(), CPUPool(),
    Soak(), MLPBatch(), ImageDecode(), ImageDecode64(), ImageWait(),
    ImageOneClient(), ImageForm(),
)
