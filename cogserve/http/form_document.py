"""The inputs of a create request sent as a form: a cogserve addition.

Cog's HTTP API takes JSON alone (coglet answers 415 to a form), so a file travels as a
data URL, a third larger than the file and base64-encoded by the client. Clients of
LitServe, KServe and FastAPI servers upload files as forms (`curl -F image=@cat.jpg`,
`httpx.post(url, files=...)`), so `POST /predictions` and `PUT /predictions/{id}` (and
the trainings' routes) take `multipart/form-data`, and `application/x-www-form-urlencoded`
(`curl -d steps=20`) too. A part is one input, read by the rules of `cog predict -i`
(`model/text_values.py`): a file part for a `Path`/`File` input is that file (made the
data URL a JSON client would have sent, so everything after the body, the store and the
worker included, has one path), a file part for any other input is its text, a field's
text is typed by the input's schema, and a repeated name builds a list input's list. The
request's other fields (`webhook`, `id`, ...) have no place in a form: a form's request
is its inputs; `Prefer: respond-async` and the path's id work as for JSON.

A multipart body is parsed with `multipart`'s push parser (2.0.1: 21 us for a 32 KB image
and two fields, against 64 us with python-multipart, on this project's 2-core VM).
"""

from __future__ import annotations

import mimetypes
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import pybase64

from cogserve.http.request_document import UNSUPPORTED_TYPE
from cogserve.http.responses import PlainError
from cogserve.model import text_values
from cogserve.model.validation import FieldError, InputValidator

FORM_TYPE = "multipart/form-data"
NOT_A_FORM = "Failed to parse the multipart/form-data body: "
NOT_URLENCODED = "Failed to parse the application/x-www-form-urlencoded body: "
MAX_PARTS = 10_000  # a bound on the parser's events for a hostile body of tiny parts
REPEATED = "is given more than once; only a list input takes several values"
NOT_TEXT = "is not UTF-8 text"
_NOT_TEXT = object()  # what _value gives for such a part
_ANY_BYTES = "application/octet-stream"


@dataclass(frozen=True)
class Form:
    """A form body's encoding: multipart with its boundary, or URL-encoded (no boundary:
    `curl -d name=value`, an HTML form without files)."""

    boundary: str | None


URLENCODED = Form(None)


def form_of(content_type: bytes | None) -> Form | None:
    """The form a request's Content-Type announces (asked of a type that is not JSON);
    None when it is not a form; 400 for multipart without a boundary."""
    if content_type is None:
        return None
    head = content_type[:33].lower()
    if head.startswith(b"application/x-www-form-urlencoded"):
        return URLENCODED
    if not head.startswith(b"multipart/form-data"):
        return None
    import multipart  # here: a server nobody sends a form never imports it (11 ms)

    mime, options = multipart.parse_options_header(content_type.decode("latin-1"))
    if mime != FORM_TYPE:
        return None
    found: str | None = options.get("boundary")
    if not found:
        raise PlainError(400, NOT_A_FORM + "its Content-Type names no boundary")
    return Form(found)


@dataclass
class _Part:
    name: str
    filename: str | None
    content_type: str | None
    chunks: list[bytes] = field(default_factory=list)


def inputs(raw: bytes, form: Form, validator: InputValidator
           ) -> tuple[dict[str, Any], list[FieldError]]:
    """The `input` object of a form body, and the problems only a form can have (a
    repeated name, text that is not UTF-8), worded as the validator's errors are; 400 for
    a body that is not a well-formed form."""
    values: dict[str, Any] = {}
    errors: list[FieldError] = []
    parts = _fields(raw) if form.boundary is None else _parts(raw, form.boundary)
    for part in parts:
        if part.name not in validator.properties:  # the validator names it as for JSON
            values[part.name] = b"".join(part.chunks).decode("utf-8", "replace")
            continue
        item, is_list = text_values.item_schema(validator, part.name)
        value = _value(part, item, validator.components)
        if value is _NOT_TEXT:
            errors.append(FieldError(part.name, NOT_TEXT))
        elif is_list:
            values.setdefault(part.name, []).append(value)
        elif part.name in values:
            errors.append(FieldError(part.name, REPEATED))
        else:
            values[part.name] = value
    return values, errors


def _fields(raw: bytes) -> list[_Part]:
    """A URL-encoded body's fields (`name=value&...`, `+` a space, `%XX` a byte). A body
    that is JSON is `curl -d '{...}'` without `-H 'Content-Type: application/json'`
    (curl's `-d` says URL-encoded): 415 saying what to send, as Cog answers it.

    Read through latin-1, which maps each byte to one character and back, so a value
    keeps its bytes whether they came as `%XX` or raw (`curl -d prompt=héllo` sends the
    UTF-8 as it is): a value that is not UTF-8 is then refused as a multipart one is."""
    if raw.lstrip()[:1] in (b"{", b"["):
        raise PlainError(415, UNSUPPORTED_TYPE)
    try:
        pairs = urllib.parse.parse_qsl(raw.decode("latin-1"), keep_blank_values=True,
                                       strict_parsing=bool(raw), max_num_fields=MAX_PARTS,
                                       encoding="latin-1")
    except ValueError as exc:  # a pair without `=`, too many pairs
        raise PlainError(400, NOT_URLENCODED + str(exc)) from None
    parts = []
    for name, value in pairs:
        try:
            text = name.encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            raise PlainError(400, NOT_URLENCODED + f"a field's name is not UTF-8 text "
                                                   f"({name.encode('latin-1')!r})") from None
        parts.append(_Part(text, None, None, [value.encode("latin-1")]))
    return parts


def _parts(raw: bytes, form_boundary: str) -> list[_Part]:
    import multipart

    parts: list[_Part] = []
    current: _Part | None = None
    try:
        with multipart.PushMultipartParser(form_boundary, content_length=len(raw),
                                           max_segment_count=MAX_PARTS) as parser:
            for event in parser.parse(raw):
                if isinstance(event, multipart.MultipartSegment):
                    if not event.name:
                        raise PlainError(400, NOT_A_FORM + "a part has no name")
                    current = _Part(event.name, event.filename, event.content_type)
                    parts.append(current)
                elif event is not None and current is not None:
                    current.chunks.append(event)
    except multipart.MultipartError as exc:  # leaving the block checks the form ended
        # its arguments: what failed, and at times the error under it (a header that is
        # not UTF-8), which str() of the exception would show as a tuple
        raise PlainError(400, NOT_A_FORM + ": ".join(map(str, exc.args))) from None
    return parts


def _value(part: _Part, item: dict[str, Any], components: dict[str, Any]) -> Any:
    data = b"".join(part.chunks)
    if part.filename is not None and text_values.is_file(item):
        # curl sends application/octet-stream for a name it does not know (`a.pgm`):
        # the name then types it, as `cog predict -i image=@a.pgm` does
        mime = part.content_type
        if not mime or mime == _ANY_BYTES:
            mime = mimetypes.guess_type(part.filename)[0] or _ANY_BYTES
        return f"data:{mime};base64,{pybase64.b64encode(data).decode('ascii')}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _NOT_TEXT
    # a field's text for a file input is its URL (http(s), data:, s3://), as in JSON
    if text_values.is_file(item):
        return text
    return text_values.typed(part.name, text, item, components)
