"""The model author's API: the types, `BaseRunner` and its decorators, the scope and
custom metrics. Re-exported by `cogserve` and, as Cog spells it, by `cogserve.cog`."""
