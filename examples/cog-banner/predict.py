import tempfile

from cog import BasePredictor, Input, Path
from PIL import Image, ImageDraw, ImageFont


class Predictor(BasePredictor):
    def setup(self) -> None:
        self.font = ImageFont.load_default(size=48)

    def predict(
        self,
        text: str = Input(description="What the banner says"),
        background: str = Input(description="Background colour", default="navy"),
        foreground: str = Input(description="Text colour", default="white"),
        padding: int = Input(description="Space around the text, in pixels", default=24,
                             ge=0, le=200),
    ) -> Path:
        """A PNG banner with `text` on it."""
        left, top, right, bottom = self.font.getbbox(text)
        size = (right - left + 2 * padding, bottom - top + 2 * padding)
        image = Image.new("RGB", size, background)
        ImageDraw.Draw(image).text((padding - left, padding - top), text, fill=foreground,
                                   font=self.font)
        out = Path(tempfile.mkdtemp()) / "banner.png"
        image.save(out)
        return out
