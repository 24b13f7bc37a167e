"""Echo one tensor of every V2 datatype back, as a numpy array of the same dtype.

Datatypes are numpy scalar types here; `Tensor["FP32", (-1, 3)]` works the same but
linters read a string in an annotation as a forward reference.
"""

from typing import Optional

import numpy as np
from cog import BaseModel, BaseRunner, Tensor

DATATYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32",
             "INT64", "FP16", "FP32", "FP64", "BYTES"]


class Output(BaseModel):
    BOOL: Optional[Tensor[np.bool_]] = None
    UINT8: Optional[Tensor[np.uint8]] = None
    UINT16: Optional[Tensor[np.uint16]] = None
    UINT32: Optional[Tensor[np.uint32]] = None
    UINT64: Optional[Tensor[np.uint64]] = None
    INT8: Optional[Tensor[np.int8]] = None
    INT16: Optional[Tensor[np.int16]] = None
    INT32: Optional[Tensor[np.int32]] = None
    INT64: Optional[Tensor[np.int64]] = None
    FP16: Optional[Tensor[np.float16]] = None
    FP32: Optional[Tensor[np.float32]] = None
    FP64: Optional[Tensor[np.float64]] = None
    BYTES: Optional[Tensor[np.object_]] = None
    matrix_sum: Optional[float] = None
    dtypes: str = ""


class Runner(BaseRunner):
    def run(
        self,
        BOOL: Optional[Tensor[np.bool_]] = None,
        UINT8: Optional[Tensor[np.uint8]] = None,
        UINT16: Optional[Tensor[np.uint16]] = None,
        UINT32: Optional[Tensor[np.uint32]] = None,
        UINT64: Optional[Tensor[np.uint64]] = None,
        INT8: Optional[Tensor[np.int8]] = None,
        INT16: Optional[Tensor[np.int16]] = None,
        INT32: Optional[Tensor[np.int32]] = None,
        INT64: Optional[Tensor[np.int64]] = None,
        FP16: Optional[Tensor[np.float16]] = None,
        FP32: Optional[Tensor[np.float32]] = None,
        FP64: Optional[Tensor[np.float64]] = None,
        BYTES: Optional[Tensor[np.object_]] = None,
        matrix: Optional[Tensor[np.float32, (-1, 3)]] = None,
        anything: Optional[np.ndarray] = None,
    ) -> Output:
        given = dict(BOOL=BOOL, UINT8=UINT8, UINT16=UINT16, UINT32=UINT32, UINT64=UINT64,
                     INT8=INT8, INT16=INT16, INT32=INT32, INT64=INT64, FP16=FP16, FP32=FP32,
                     FP64=FP64, BYTES=BYTES)
        out = Output()
        seen = []
        for name, value in given.items():
            if value is not None:
                assert isinstance(value, np.ndarray), type(value)
                value[...] = value  # the array is writable, as any input
                setattr(out, name, value)
                seen.append(f"{name}:{value.dtype}:{list(value.shape)}")
        if matrix is not None:
            out.matrix_sum = float(matrix.sum())
            seen.append(f"matrix:{matrix.dtype}:{list(matrix.shape)}")
        if anything is not None:
            seen.append(f"anything:{anything.dtype}:{list(anything.shape)}")
        out.dtypes = " ".join(seen)
        return out
