"""A multipart/form-data create request read into the inputs JSON would have given
(http/form_document.py), in process; tests/test_form_inputs.py sends real forms."""

from __future__ import annotations

import base64

import httpx
import pytest

from cogserve.http import form_document
from cogserve.http.responses import PlainError
from cogserve.model.validation import InputValidator

SCHEMA = {"components": {"schemas": {
    "Input": {"type": "object", "properties": {
        "image": {"type": "string", "format": "uri"},
        "images": {"type": "array", "items": {"type": "string", "format": "uri"}},
        "steps": {"type": "integer"},
        "scale": {"type": "number"},
        "loud": {"type": "boolean"},
        "prompt": {"type": "string"},
        "words": {"type": "array", "items": {"type": "string"}},
        "extra": {"type": "object"},
        "mode": {"allOf": [{"$ref": "#/components/schemas/mode"}]},
    }},
    "mode": {"title": "mode", "enum": ["fast", "slow"], "type": "string"},
}}}
VALIDATOR = InputValidator(SCHEMA)


Files = list[tuple[str, tuple[str | None, bytes | str, str | None]]]


def read(files: Files | None = None, data: dict[str, str | list[str]] | None = None
         ) -> tuple[dict, list]:
    """A form as httpx (a real client) encodes it (multipart with `files`, URL-encoded
    with `data` alone), read by the server's rules."""
    request = httpx.Request("POST", "http://test/predictions", files=files, data=data)
    form = form_document.form_of(request.headers["content-type"].encode())
    assert form is not None
    return form_document.inputs(request.read(), form, VALIDATOR)


FIELDS = {"steps": "20", "scale": "1.5", "loud": "true", "prompt": "20", "extra": '{"k": 1}',
          "mode": "slow"}
TYPED = {"steps": 20, "scale": 1.5, "loud": True, "prompt": "20", "extra": {"k": 1},
         "mode": "slow"}


def test_fields_are_typed_by_the_schema_as_cog_predict_types_its_inputs():
    # URL-encoded (`curl -d`), a repeated name a list input's items
    values, errors = read(data={**FIELDS, "words": ["a b", "c&d"]})
    assert errors == []
    assert values == {**TYPED, "words": ["a b", "c&d"]}
    # multipart fields without a file name (`curl -F name=value`)
    values, errors = read(files=[(k, (None, v, None)) for k, v in FIELDS.items()])
    assert errors == [] and values == TYPED
    # UTF-8 escaped (a browser) or raw (`curl -d prompt=héllo`), `+` a space
    values, errors = form_document.inputs("prompt=héllo+wörld&words=%C3%A9&words=a%2Bb"
                                          .encode(), form_document.URLENCODED, VALIDATOR)
    assert errors == [] and values == {"prompt": "héllo wörld", "words": ["é", "a+b"]}
    # text that is not of the input's type stays text, for the validator to refuse
    assert read(data={"steps": "lots"})[0] == {"steps": "lots"}
    assert VALIDATOR.validate({"steps": "lots"})


def test_a_file_part_for_a_file_input_is_its_data_url():
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 40
    values, errors = read(files=[("image", ("cat.jpg", jpeg, "image/jpeg")),
                                 ("images", ("a.png", b"A", None)),
                                 ("images", ("b.bin", b"B", "application/x-thing")),
                                 # curl's type for a name it does not know
                                 ("images", ("c.pgm", b"C", "application/octet-stream")),
                                 ("images", ("d.unknown", b"D", "application/octet-stream"))])
    assert errors == []
    head, _, data = values["image"].partition(",")
    assert head == "data:image/jpeg;base64" and base64.b64decode(data) == jpeg
    assert values["images"] == ["data:image/png;base64,QQ==",  # typed from its name
                                "data:application/x-thing;base64,Qg==",
                                "data:image/x-portable-graymap;base64,Qw==",
                                "data:application/octet-stream;base64,RA=="]


def test_a_file_part_for_another_input_is_its_text_and_a_field_for_a_file_its_url():
    values, errors = read(files=[("prompt", ("p.txt", "héllo".encode(), "text/plain")),
                                 ("steps", ("n.txt", b"7", None))],
                          data={"image": "https://example.com/cat.jpg"})
    assert errors == []
    assert values == {"prompt": "héllo", "steps": 7, "image": "https://example.com/cat.jpg"}


def test_what_only_a_form_can_get_wrong_is_worded_as_the_validator_words_inputs():
    values, errors = read(files=[("prompt", ("p.txt", b"\xff\xfe", None))],
                          data={"steps": ["1", "2"]})
    assert sorted(tuple(e) for e in errors) == [("prompt", form_document.NOT_TEXT),
                                                ("steps", form_document.REPEATED)]
    assert values == {"steps": 1}
    # URL-encoded alike, its bytes escaped or raw
    for body in (b"prompt=%ff", b"prompt=\xff"):
        values, errors = form_document.inputs(body, form_document.URLENCODED, VALIDATOR)
        assert [tuple(e) for e in errors] == [("prompt", form_document.NOT_TEXT)]
    # a name the model has no input for is kept, for the validator to name it
    values, errors = read(data={"nope": "x"})
    assert values == {"nope": "x"} and errors == []
    assert [e.field for e in VALIDATOR.validate(values)] == ["nope"]


@pytest.mark.parametrize("body, message", [
    (b"", "Unexpected end of multipart stream"),
    (b"--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhi",
     "Unexpected end of multipart stream"),
    (b"--b\r\nContent-Disposition: form-data\r\n\r\nhi\r\n--b--\r\n", "a part has no name"),
    (b"no boundary here at all", "Unexpected end of multipart stream"),
    # a hostile body: parts past MAX_PARTS, a part's head past the parser's bound
    (b"".join(b'--b\r\nContent-Disposition: form-data; name="words"\r\n\r\nx\r\n'
              for _ in range(form_document.MAX_PARTS + 1)) + b"--b--\r\n",
     "Maximum segment count exceeded"),
    (b'--b\r\nContent-Disposition: form-data; name="words"\r\nX-Pad: ' + b"a" * 5000
     + b"\r\n\r\nx\r\n--b--\r\n", "Maximum segment header length exceeded"),
    # a part's header that is not UTF-8: what failed, then why (not a tuple's repr)
    (b'--b\r\nContent-Disposition: form-data; name="\xff"\r\n\r\nx\r\n--b--\r\n',
     "Segment header failed to decode: 'utf-8' codec can't decode byte 0xff"),
])
def test_a_body_that_is_not_a_whole_form_is_400_saying_why(body, message):
    with pytest.raises(PlainError) as caught:
        form_document.inputs(body, form_document.Form("b"), VALIDATOR)
    assert caught.value.status == 400
    assert caught.value.text.startswith(form_document.NOT_A_FORM)
    assert message in caught.value.text


def test_a_url_encoded_body_that_is_not_one_is_400_saying_why():
    for body, message in ((b"steps", "bad query field: 'steps'"),
                          (b"%ff=1", "a field's name is not UTF-8 text (b'\\xff')"),
                          (b"\xfe=1", "a field's name is not UTF-8 text (b'\\xfe')")):
        with pytest.raises(PlainError) as caught:
            form_document.inputs(body, form_document.URLENCODED, VALIDATOR)
        assert caught.value.status == 400
        assert caught.value.text == form_document.NOT_URLENCODED + message
    too_many = b"&".join(b"words=x" for _ in range(form_document.MAX_PARTS + 1))
    with pytest.raises(PlainError):
        form_document.inputs(too_many, form_document.URLENCODED, VALIDATOR)
    assert form_document.inputs(b"", form_document.URLENCODED, VALIDATOR) == ({}, [])


def test_json_sent_as_url_encoded_is_415_saying_what_to_send_as_cog_does():
    # `curl -d '{"input": ...}'` without a JSON Content-Type: curl says URL-encoded
    for body in (b'{"input": {"steps": 2}}', b"  [1]"):
        with pytest.raises(PlainError) as caught:
            form_document.inputs(body, form_document.URLENCODED, VALIDATOR)
        assert caught.value.status == 415
        assert caught.value.text == "Expected request with `Content-Type: application/json`"


def test_only_a_form_content_type_is_a_form():
    assert form_document.form_of(None) is None
    assert form_document.form_of(b"application/json") is None
    assert form_document.form_of(b"multipart/mixed; boundary=x") is None
    assert form_document.form_of(b'Multipart/Form-Data; boundary="a b"') == \
        form_document.Form("a b")
    assert form_document.form_of(b"application/x-www-form-urlencoded; charset=utf-8") is \
        form_document.URLENCODED
    with pytest.raises(PlainError) as caught:
        form_document.form_of(b"multipart/form-data")
    assert caught.value.status == 400 and "no boundary" in caught.value.text
