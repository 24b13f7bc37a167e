"""`cog.model`: BaseModel, for structured outputs."""

from cogserve.types import BaseModel

__all__ = ["BaseModel"]
