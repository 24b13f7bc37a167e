"""What `cogserve predict | run | train` prints and writes, as `cog` does (pkg/cli/predict.go).

- `--json`: the whole prediction as indented JSON (two spaces), on stdout or into `-o`
  (default name `output.json`); exit status 1 unless it succeeded.
- a file output (`Path`, a list or iterator of them) is written to `-o` or `output.<ext>`
  (`output.0.<ext>`, ... for several); `Written output to: PATH` goes to stderr.
- a string is printed raw (or written to `-o` as text); anything else, iterators
  included, is printed as indented JSON (a list of items), as Go's encoder writes it.
- no output at all: `No output generated` on stderr, exit status 0.
- `cogserve train` writes its output to `weights` unless `-o` says otherwise.

cogserve also writes files nested in an object output (`output.N.<ext>`), which `cog`
leaves as data URLs on the terminal.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import os
import pathlib
import sys
from typing import Any
from urllib.parse import unquote_to_bytes

from cogserve.wire.states import Status


class OutputError(Exception):
    """The output cannot be written where it was asked to go."""


def writable_target(requested: str | None, fallback: str) -> str:
    """Where output goes: `-o` (a folder gets `fallback`'s name inside it) or `fallback`."""
    path = os.path.expanduser(requested.removeprefix("@") if requested else fallback)
    if os.path.isdir(path):
        if not requested:
            raise OutputError(f'Output path is not writable: Default output name "{path}" '
                              "conflicts with directory, provide --output")
        path = os.path.join(path, os.path.basename(fallback))
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise OutputError(f"Output path is not writable: {path}: permission denied")
        return path
    parent = os.path.dirname(path) or "."
    if not os.access(parent, os.W_OK):
        raise OutputError(f"Output path is not writable: Output directory is not writable: "
                          f"{parent}")
    return path


class Presenter:
    """Turns a finished prediction into `cog`'s stdout, stderr, files and exit status."""

    def __init__(self, output_schema: dict[str, Any], target: str, explicit: bool,
                 whole_json: bool) -> None:
        self.schema = output_schema
        self.target = target  # from writable_target()
        self.write_to_disk = explicit  # -o given (or `train`'s default `weights`)
        self.whole_json = whole_json
        self.nested_files = 0

    def present(self, prediction: dict[str, Any]) -> int:
        succeeded = prediction["status"] == Status.SUCCEEDED
        output = prediction["output"]
        if succeeded and output is not None:
            base = _trim_ext(self.target) if self.whole_json else self.target
            output = self._files(output, self.schema, base)
        if self.whole_json:
            return self._whole(prediction, output, succeeded)
        if not succeeded:
            error = prediction.get("error") or ""
            _info(f"error: Prediction failed with status \"{prediction['status']}\": {error}")
            return 1
        if output is None:
            _info("No output generated")
            return 0
        if _is_uri(self.schema) or (self.schema.get("type") == "array"
                                    and _is_uri(self.schema.get("items") or {})):
            return 0  # the files are written, and said so
        if self.schema.get("type") == "string" and isinstance(output, str):
            self._emit(output.encode())
        else:
            self._emit(go_json(output).encode())
        return 0

    def _whole(self, prediction: dict[str, Any], output: Any, succeeded: bool) -> int:
        # cog's Response fields first (status, output, error, metrics), then the rest
        doc = {"status": prediction["status"], "output": output,
               "error": prediction.get("error") or "", "metrics": prediction.get("metrics")}
        for key, value in prediction.items():
            doc.setdefault(key, value)
        if not doc["metrics"]:
            del doc["metrics"]
        if self.write_to_disk and not self.target.endswith(".json"):
            _info(f"--output value does not have a .json suffix: "
                  f"{os.path.basename(self.target)}")
        self._emit(go_json(doc, sort_top=False).encode())
        return 0 if succeeded else 1

    def _emit(self, data: bytes) -> None:
        if self.write_to_disk:
            _write(data, self.target)
            _info(f"Written output to: {self.target}")
        else:
            sys.stdout.write(data.decode() + "\n")
            sys.stdout.flush()

    def _files(self, value: Any, schema: dict[str, Any], destination: str) -> Any:
        if _is_uri(schema) and isinstance(value, str):
            return _write_data_url(value, destination)
        items = schema.get("items") or {}
        if schema.get("type") == "array" and _is_uri(items) and isinstance(value, list):
            stem, ext = os.path.splitext(destination)
            return [self._files(v, items, f"{stem}.{i}{ext}") for i, v in enumerate(value)]
        return self._nested(value)

    def _nested(self, value: Any) -> Any:
        """Files inside an object output: output.0.<ext>, output.1.<ext>, ... (cogserve's)."""
        if isinstance(value, str) and value.startswith("data:") and "," in value:
            path = _write_data_url(value, f"output.{self.nested_files}")
            self.nested_files += 1
            return path
        if isinstance(value, list):
            return [self._nested(v) for v in value]
        if isinstance(value, dict):
            return {k: self._nested(v) for k, v in value.items()}
        return value


def _is_uri(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and schema.get("format") == "uri"


def _trim_ext(path: str) -> str:
    return os.path.splitext(path)[0]


def _write_data_url(url: str, destination: str) -> str:
    """A data URL's bytes to `destination`; with no extension there, the media type's."""
    header, comma, payload = url.partition(",")
    if not url.startswith("data:") or not comma:
        return url  # not a file we hold (an upload URL): shown as it is
    media = header[5:]
    try:
        data = (base64.b64decode(payload) if media.endswith(";base64")
                else unquote_to_bytes(payload))
    except binascii.Error as exc:
        raise OutputError(f"Failed to write output: Failed to decode data URL: {exc}") from None
    stem, ext = os.path.splitext(destination)
    if ext[1:].isdigit():  # output.0: the number is part of the name
        stem, ext = destination, ""
    if not ext:
        mime = media.removesuffix(";base64").split(";")[0]
        ext = mimetypes.guess_extension(mime) or "" if mime else ""
    path = stem + ext
    _write(data, path)
    _info(f"Written output to: {path}")
    return path


def _write(data: bytes, path: str) -> None:
    target = pathlib.Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except OSError as exc:
        raise OutputError(f"Failed to write output: {exc}") from None


def _info(text: str) -> None:
    sys.stdout.flush()
    print(text, file=sys.stderr, flush=True)


def go_json(value: Any, sort_top: bool = True) -> str:
    """Indented JSON as Go's encoder writes it: object keys sorted, whole floats without
    `.0`, `<`, `>`, `&` escaped, non-ASCII text as it is."""
    text = json.dumps(_go_values(value, sort_top), indent=2, ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _go_values(value: Any, sort: bool = True) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, list):
        return [_go_values(v) for v in value]
    if isinstance(value, dict):
        keys = sorted(value) if sort else list(value)
        return {k: _go_values(value[k]) for k in keys}
    return value
