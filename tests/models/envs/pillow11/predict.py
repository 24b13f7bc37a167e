import sys

import PIL
import requests  # not declared: the Cog SDK's own dependency, as in a Cog image
from cog import BasePredictor


class Predictor(BasePredictor):
    def predict(self) -> dict:
        return {"pillow": PIL.__version__, "prefix": sys.prefix,
                "requests": bool(requests.__version__)}
