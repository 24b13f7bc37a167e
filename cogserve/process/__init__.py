"""What every cogserve process sets up: environment variables, malloc thresholds,
the lifeline to the parent, the URL policy, tracing, Ctrl-C and the log writer."""
