"""Scale-out: a container image recipe, Kubernetes/KServe manifests and Ray Serve.

Each target is its own module (`dockerfile`, `k8s`, `ray`); `commands` registers their
subcommands on the `cogserve` parser. Nothing here is imported by `cogserve serve`.
"""

from __future__ import annotations

APP_DIR = "/src"  # where the image keeps the model folder
APP_UID = 10001  # the image's non-root user (numeric, so Kubernetes can check runAsNonRoot)
DEFAULT_PORT = 5000  # Cog's port; KServe's runtime sets PORT=8080
KSERVE_PORT = 8080
LIVE_PATH = "/v2/health/live"
READY_PATH = "/v2/health/ready"
