"""`python -m cogserve.cli`: the same command as the `cogserve` script."""

from cogserve.cli.main import main

main()
