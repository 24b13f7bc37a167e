"""include/exclude of a `weights:` source: gitignore's globs, as Cog's filter reads them
(pkg/model/weightsource/filter.go and its tests)."""

from __future__ import annotations

import pytest

from cogserve.envs.weights import matches


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("*.bin", "model.bin", True),
    ("*.bin", "deep/down/model.bin", True),      # a bare pattern floats across folders
    ("*.bin", "model.bin.txt", False),
    ("onnx/", "onnx/model.onnx", True),           # a folder takes everything below it
    ("onnx/", "sub/onnx/model.onnx", True),
    ("onnx/", "onnx", False),                     # a trailing slash matches folders only
    ("onnx/*.bin", "onnx/a.bin", True),           # a slash anchors at the root
    ("onnx/*.bin", "sub/onnx/a.bin", False),
    ("onnx/*.bin", "onnx/x/a.bin", False),        # * stops at a slash
    ("**/a.bin", "x/y/a.bin", True),
    ("**/a.bin", "a.bin", True),
    ("/README.md", "README.md", True),
    ("/README.md", "docs/README.md", False),
    ("model.safetensors", "model.safetensors", True),
    ("tokenizer*", "tokenizer_config.json", True),
])
def test_gitignore_rules(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected
