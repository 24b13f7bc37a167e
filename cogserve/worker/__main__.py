from cogserve.process.lifeline import die_with_parent

die_with_parent()  # before the worker's imports: a server gone meanwhile takes it along

from cogserve.process.heap import keep_freed_memory  # noqa: E402

keep_freed_memory()  # before the model's imports: its buffers are carved by these rules

from cogserve.worker.main import main  # noqa: E402

main()
