"""The worker subprocess: imports the model, runs setup() once and run() per prediction.

It is started by the parent (`cogserve.runtime.supervisor`) as `python -m cogserve.worker`
and talks to it only through the sockets of `cogserve.wire.ipc`.
"""
