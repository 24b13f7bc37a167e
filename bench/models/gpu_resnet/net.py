"""The GPU scenario's model: torchvision's resnet50 with random weights (nothing is
downloaded), fp16 and channels_last on CUDA, a 224x224 image in, the top 5 classes out.

Shared by the Cog model (predict.py), the batched cogserve model (batched.py), the
LitServe app and the in-process ceiling (ceiling.py), so every system runs the same
decode and the same forward pass. `BENCH_GPU_STANDIN=1` swaps the network for a numpy
stand-in (the same decode, a pooled 192-feature projection to 1000 classes), so the
bench's CPU smoke mode runs the whole flow without torch or a GPU.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
from PIL import Image

SIZE = 224
TOP = 5
CLASSES = 1000
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32) * 255
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32) * 255


def standin() -> bool:
    return os.environ.get("BENCH_GPU_STANDIN", "") == "1"


def decode(data: bytes) -> np.ndarray:
    """JPEG bytes -> uint8 HWC array of SIZE x SIZE (resized only if it is not already)."""
    with Image.open(io.BytesIO(data)) as image:
        rgb = image.convert("RGB")
        if rgb.size != (SIZE, SIZE):
            rgb = rgb.resize((SIZE, SIZE), Image.BILINEAR)
        return np.asarray(rgb)


def read(path: Any) -> np.ndarray:
    with open(path, "rb") as f:
        return decode(f.read())


class Classifier:
    """The network on the best device there is; `top5` takes decoded images."""

    def __init__(self) -> None:
        self.device = "cpu"
        if standin():
            rng = np.random.default_rng(0)
            self.weights = rng.standard_normal((192, CLASSES), dtype=np.float32)
            return
        import torch
        import torchvision

        torch.manual_seed(0)
        self.torch = torch
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        model = torchvision.models.resnet50(weights=None).eval()
        self.dtype = torch.float16 if self.device == "cuda" else torch.float32
        self.model = model.to(self.device, dtype=self.dtype,
                              memory_format=torch.channels_last)
        self.mean = torch.tensor(MEAN, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(STD, device=self.device).view(1, 3, 1, 1)
        # cuDNN's own heuristics, not its autotuner (`cudnn.benchmark`): the autotuner
        # measures the algorithms anew for every input shape it meets, and a server
        # batching dynamically meets up to 32 batch sizes, each one first seen in the
        # middle of a measured point (a pause of its own, in some systems' points and not
        # others'). Every system and the in-process ceiling run the same choice.
        torch.backends.cudnn.benchmark = False

    def top5(self, images: list[np.ndarray]) -> list[dict[str, list[Any]]]:
        """Per image: its TOP classes and their probabilities, most likely first."""
        if standin():
            return self._standin(images)
        torch = self.torch
        with torch.inference_mode():
            batch = torch.from_numpy(np.stack(images)).to(self.device, non_blocking=True)
            x = batch.permute(0, 3, 1, 2).float().sub_(self.mean).div_(self.std)
            x = x.to(self.dtype).contiguous(memory_format=torch.channels_last)
            probs = torch.softmax(self.model(x).float(), dim=1)
            values, indices = probs.topk(TOP, dim=1)
            values, indices = values.cpu().tolist(), indices.cpu().tolist()
        return [{"classes": i, "probabilities": v} for i, v in zip(indices, values, strict=True)]

    def _standin(self, images: list[np.ndarray]) -> list[dict[str, list[Any]]]:
        x = np.stack(images).astype(np.float32)
        pooled = x.reshape(len(images), 8, SIZE // 8, 8, SIZE // 8, 3).mean(axis=(2, 4))
        logits = ((pooled - MEAN) / STD).reshape(len(images), -1) @ self.weights
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        order = np.argsort(-probs, axis=1)[:, :TOP]
        return [{"classes": [int(c) for c in row],
                 "probabilities": [float(p) for p in probs[n, row]]}
                for n, row in enumerate(order)]
