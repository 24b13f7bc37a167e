"""`cog.input`: the Input() marker and the FieldInfo it returns."""

from cogserve.runner import FieldInfo, Input

__all__ = ["FieldInfo", "Input"]
