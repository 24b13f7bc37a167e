"""The parent process: prediction state, slots, the worker's supervision, file outputs."""
