"""The operator's trace header and the caller's `trace.*` tags, by Cog's rules."""

from __future__ import annotations

from cogserve.observability.propagation import (
    caller_attributes,
    from_custom_header,
    valid_traceparent,
)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_w3c_and_jaeger_values_become_a_traceparent() -> None:
    parent = f"00-{TRACE}-00f067aa0ba902b7-01"
    assert from_custom_header(parent.upper(), "w3c") == parent
    assert from_custom_header(f"{TRACE}:00f067aa0ba902b7:0:1", "jaeger") == parent
    assert from_custom_header(f"{TRACE}%3A00f067aa0ba902b7%3A0%3A0", "jaeger") == \
        f"00-{TRACE}-00f067aa0ba902b7-00"  # url-encoded, not sampled
    assert from_custom_header("abc:def:0:1", "jaeger") == \
        "00-00000000000000000000000000000abc-0000000000000def-01"  # 64-bit ids widened


def test_malformed_values_are_ignored() -> None:
    for value, kind in (("nonsense", "w3c"), ("a:b:c", "jaeger"), ("xyz:1:0:1", "jaeger"),
                        (f"{TRACE}:0:0:1", "jaeger"), ("00-" + "0" * 32 + "-1" * 8, "w3c")):
        assert from_custom_header(value, kind) is None, value
    assert not valid_traceparent(f"00-{'0' * 32}-00f067aa0ba902b7-01")


def test_caller_tags_are_filtered_cut_and_bounded() -> None:
    context = {"trace.model.name": "example/model", "trace.bad key": "x",
               "ordinary": "y", "trace.": "empty", "trace.n": "é" * 70,
               "trace." + "k" * 65: "too long a name", "trace.num": 3}
    assert caller_attributes(context) == {"caller.model.name": "example/model",
                                          "caller.n": "é" * 64}
    many = {f"trace.t{n:03d}": "v" * 128 for n in range(40)}
    got = caller_attributes(many)
    assert len(got) == 16 and sum(len(k) + len(v) for k, v in got.items()) <= 4096
    big = {f"trace.{'x' * 62}{n:02d}": "é" * 64 for n in range(16)}  # the widest 16
    assert sum(len(k.encode()) + len(v.encode())
               for k, v in caller_attributes(big).items()) <= 4096
