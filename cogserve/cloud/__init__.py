"""The clouds' own serving contracts, on the model's server: Amazon SageMaker's
(`GET /ping`, `POST /invocations`: `cogserve serve --sagemaker`, or an image's `serve`
argument) and Vertex AI's (the health and predict routes named by AIP_HEALTH_ROUTE and
AIP_PREDICT_ROUTE, on AIP_HTTP_PORT).

Routes added to the App's table by `assembly.build_app`, beside Cog's routes, only when
asked for: a server without them pays nothing. Each contract is a module of handlers
(`sagemaker`, `vertex`); everything they ask of the runtime is in `runtime`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogserve.cloud.runtime import CloudRuntime
from cogserve.process.envvars import VertexRoutes

if TYPE_CHECKING:
    from cogserve.http.routing import Handler
    from cogserve.runtime.service import Service

SAGEMAKER_PORT = 8080  # where SageMaker sends /ping and /invocations


def health_paths(sagemaker: bool, vertex: VertexRoutes | None) -> list[str]:
    """The contracts' health routes, which COGSERVE_AUTH_TOKEN leaves open."""
    return (["/ping"] if sagemaker else []) + ([vertex.health] if vertex is not None else [])


def routes(service: Service, max_body: int, *, sagemaker: bool,
           vertex: VertexRoutes | None) -> dict[str, dict[str, Handler]]:
    """The routes of the contracts asked for (none: an empty table)."""
    table: dict[str, dict[str, Handler]] = {}
    if not sagemaker and vertex is None:
        return table
    runtime = CloudRuntime(service)
    if sagemaker:
        from cogserve.cloud import sagemaker as sm

        table.update(sm.routes(runtime, max_body))
    if vertex is not None:
        from cogserve.cloud import vertex as vx

        table.update(vx.routes(runtime, max_body, vertex))
    return table
