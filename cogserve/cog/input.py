"""`cog.input`: the Input() marker and the FieldInfo it returns."""

from cogserve.sdk.runner import FieldInfo, Input

__all__ = ["FieldInfo", "Input"]
