from cogserve.lifeline import die_with_parent

die_with_parent()  # before the worker's imports: a server gone meanwhile takes it along

from cogserve.worker.main import main  # noqa: E402

main()
