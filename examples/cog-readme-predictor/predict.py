# The predictor from Cog's README ("How it works"), unmodified except for the marked lines:
# `import torch` / `torch.load` would download a framework, so a tiny pure-Python model
# (tinymodel.py) stands in for it, and preprocess/postprocess are spelled out.
from cog import BasePredictor, Input, Path
import tinymodel as torch  # adapted: stands in for `import torch`
from tinymodel import postprocess, preprocess  # adapted: the README leaves these to you

class Predictor(BasePredictor):
    def setup(self):
        """Load the model into memory to make running multiple predictions efficient"""
        self.model = torch.load("./weights.pth")

    # The arguments and types the model takes as input
    def predict(self,
          image: Path = Input(description="Grayscale input image")
    ) -> Path:
        """Run a single prediction on the model"""
        processed_image = preprocess(image)
        output = self.model(processed_image)
        return postprocess(output)
