"""In-process units of this issue's pieces: webhook signatures (checked against the
standardwebhooks library's own signer), the secret's and Vertex's variables, bucket URLs,
the AWS shared files, the store's errors in one line, and Vertex's request shape."""

from __future__ import annotations

import base64

import pytest
from standardwebhooks.webhooks import Webhook

from cogserve import buckets
from cogserve.cloud.vertex import instance_inputs
from cogserve.exceptions import DefinitionError
from cogserve.http.responses import HTTPError
from cogserve.process.envvars import vertex_routes, webhook_secret
from cogserve.runtime.signing import Signer

KEY = b"0123456789abcdef0123456789abcdef"
SECRET = "whsec_" + base64.b64encode(KEY).decode()


def test_signatures_are_the_libraries_own() -> None:
    body = b'{"id":"p1","status":"succeeded"}'
    headers = Signer(KEY).headers("msg_p1_3", body, now=1_700_000_000)
    assert headers["webhook-id"] == "msg_p1_3"
    assert headers["webhook-timestamp"] == "1700000000"
    import datetime

    expected = Webhook(SECRET).sign("msg_p1_3",
                                    datetime.datetime.fromtimestamp(1_700_000_000,
                                                                    datetime.UTC),
                                    body.decode())
    assert headers["webhook-signature"] == expected


@pytest.mark.parametrize("value, says", [
    ("abc", "does not start with 'whsec_'"),
    ("whsec_%%%", "is not whsec_ followed by base64"),
    ("whsec_" + base64.b64encode(b"tiny").decode(), "a 4-byte key"),
])
def test_a_bad_secret_is_refused_by_name(monkeypatch, value, says) -> None:
    monkeypatch.setenv("COGSERVE_WEBHOOK_SECRET", value)
    with pytest.raises(DefinitionError, match="COGSERVE_WEBHOOK_SECRET") as caught:
        webhook_secret()
    assert says in str(caught.value)


def test_a_good_secret_and_none(monkeypatch) -> None:
    monkeypatch.setenv("COGSERVE_WEBHOOK_SECRET", SECRET)
    assert webhook_secret() == KEY
    monkeypatch.delenv("COGSERVE_WEBHOOK_SECRET")
    assert webhook_secret() is None


def test_vertex_routes_need_all_three_variables(monkeypatch) -> None:
    for name in ("AIP_HTTP_PORT", "AIP_HEALTH_ROUTE", "AIP_PREDICT_ROUTE"):
        monkeypatch.delenv(name, raising=False)
    assert vertex_routes() is None
    monkeypatch.setenv("AIP_HTTP_PORT", "8080")
    monkeypatch.setenv("AIP_HEALTH_ROUTE", "/health")
    assert vertex_routes() is None
    monkeypatch.setenv("AIP_PREDICT_ROUTE", "predict")
    with pytest.raises(DefinitionError, match="AIP_PREDICT_ROUTE='predict' is not a path"):
        vertex_routes()
    monkeypatch.setenv("AIP_PREDICT_ROUTE", "/predict")
    routes = vertex_routes()
    assert routes is not None and (routes.port, routes.health, routes.predict) == (
        8080, "/health", "/predict")
    monkeypatch.setenv("AIP_HTTP_PORT", "http")
    with pytest.raises(DefinitionError, match="AIP_HTTP_PORT"):
        vertex_routes()


def test_instances_with_parameters_under_them() -> None:
    assert instance_inputs({"instances": [{"a": 1}, {"a": 2, "b": 3}],
                            "parameters": {"b": 0}}) == [{"a": 1, "b": 0}, {"a": 2, "b": 3}]
    assert instance_inputs({"instances": [{}]}) == [{}]
    for bad, says in (([], "instances"), ({"instances": []}, "empty"),
                      ({"instances": [1]}, "instance 0"),
                      ({"instances": [{}], "parameters": [1]}, "parameters")):
        with pytest.raises(HTTPError) as caught:
            instance_inputs(bad)
        assert caught.value.status == 400 and says in caught.value.body["error"]


def test_bucket_urls() -> None:
    url = buckets.ObjectURL.parse("s3://bucket/a/b.png")
    assert (url.scheme, url.bucket, url.key, str(url)) == ("s3", "bucket", "a/b.png",
                                                           "s3://bucket/a/b.png")
    assert buckets.ObjectURL.parse("gs://b/k").scheme == "gs"
    for bad in ("s3://", "s3:///key", "az://b/k"):
        with pytest.raises(ValueError):
            buckets.ObjectURL.parse(bad)


def test_settings_from_the_environment_over_the_shared_files(monkeypatch, tmp_path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
                 "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "credentials").write_text(
        "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n"
        "[dev]\naws_access_key_id = K\naws_secret_access_key = S\n")
    (tmp_path / "config").write_text(
        "[default]\nregion = eu-west-1\n"
        "[profile dev]\nregion = us-west-2\nendpoint_url = http://minio:9000\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    assert buckets.settings() == {"access_key_id": "D", "secret_access_key": "DS",
                                  "region": "eu-west-1"}
    monkeypatch.setenv("AWS_PROFILE", "dev")
    assert buckets.settings() == {"access_key_id": "K", "secret_access_key": "S",
                                  "region": "us-west-2", "endpoint": "http://minio:9000",
                                  "allow_http": "true"}
    # the environment wins, a key from it whole (never the file's secret with it)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "EK")
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://r2.example")
    assert buckets.settings() == {"access_key_id": "EK", "region": "ap-south-1",
                                  "endpoint": "https://r2.example"}


def test_the_stores_errors_in_one_line() -> None:
    answered = RuntimeError(
        "Object at location k not found: Error performing GET http://h/b/k in 4ms - Server "
        "returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\"?>\n<Error><Code>"
        "NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>"
        "\n\nDebug source:\nNotFound { ... }")
    assert buckets.describe(answered) == ("HTTP 404 Not Found: NoSuchKey: The specified key "
                                          "does not exist.")
    unreachable = RuntimeError(
        "Generic S3 error: Error performing GET http://h/b/k in 1ms, after 2 retries - HTTP "
        "error: error sending request\n\nDebug source:\n Os { code: 111, message: "
        "\"Connection refused\" }")
    assert buckets.describe(unreachable) == "HTTP error: error sending request " \
        "(Connection refused)"
    assert buckets.kind(FileNotFoundError("x")) == "no such object"
    assert buckets.kind(RuntimeError("<Code>NoSuchBucket</Code>")) == "no such bucket"
    assert buckets.kind(RuntimeError("<Code>SignatureDoesNotMatch</Code>")) == "access denied"
    assert buckets.kind(RuntimeError("other")) == ""
