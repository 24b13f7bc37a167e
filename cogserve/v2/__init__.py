"""The Open Inference Protocol (KServe/Triton "V2" REST) over the same runtime as Cog's API."""

# The key of a packed tensor in the input dict the V2 routes send to the worker:
# {TENSOR_KEY: {"datatype", "shape", and "b64" | "file" | "items_b64"}}. Only the V2
# routes build it, after validation; the Cog routes' validator refuses it.
TENSOR_KEY = "__cogserve_tensor__"
# Packed tensors of at least this many bytes go to the worker as a file in the spill
# folder rather than base64 in the IPC frame: 1M float32 costs ~1 ms instead of ~25 ms.
FILE_THRESHOLD = 64 * 1024
SPILL_PREFIX = "tensor-"
