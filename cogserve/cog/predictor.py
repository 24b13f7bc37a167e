"""`cog.predictor`: the classes a model subclasses."""

from cogserve.runner import BasePredictor, BaseRunner

__all__ = ["BasePredictor", "BaseRunner"]
