"""The GPU scenario (issue 35): an image model served by cogserve (with `@batch` and
without, 1, 2 and 4 workers), by LitServe with its batching and by the reference, under
1 to 128 closed-loop clients, the image sent as a data URL in JSON; cogserve `@batch` and
LitServe again with it as a multipart/form-data upload (1 and 4 workers); the GPU's
utilisation and memory sampled through NVML and each process's CPU per request; the
model's in-process ceiling; a real CUDA model through `cogserve serve` and `cogserve
predict`, its output checked.

The GPU machine has Python 3.12 with torch, torchvision, numpy, pillow, httpx and uvloop
and no network, so the run is in two parts:

- here, with the network: `python3 -m bench.gpu.bundle` writes `bench/.cache/gpu-bundle/`
  (git-ignored): the wheels of cogserve (this checkout), LitServe 0.2.19 (with
  python-multipart, for its forms), cog 0.23.1 and coglet 0.23.1 with their dependencies
  for CPython 3.12 on manylinux x86_64, and wrk with the shared libraries it needs;
- there: `bench/gpu/run --out DIR` installs them offline into venvs that see the system's
  torch (`--system-site-packages`), then measures (`bench/gpu/measure.py`).

`bench/gpu/run --smoke` is the same flow on a CPU with a numpy stand-in for the network
(`bench/models/gpu_resnet/net.py`), fewer client counts and short runs, its own bundle
for this machine's Python: the whole run checked before a GPU is used.
"""
