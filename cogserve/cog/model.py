"""`cog.model`: BaseModel, for structured outputs."""

from cogserve.sdk.types import BaseModel

__all__ = ["BaseModel"]
