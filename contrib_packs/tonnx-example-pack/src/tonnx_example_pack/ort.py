"""onnxruntime kernel of the pack's domain, through onnxruntime-extensions' Python ops.

Registering runs once per process (onnxruntime-extensions keeps its own global table of
Python ops); the library path goes into each ``SessionOptions``.
"""

from __future__ import annotations

import functools

import numpy as np

from . import DOMAIN


@functools.cache
def _register() -> None:
    from onnxruntime_extensions import PyCustomOpDef, onnx_op

    @onnx_op(
        op_type=f"{DOMAIN}::SoftClip",
        inputs=[PyCustomOpDef.dt_float],
        outputs=[PyCustomOpDef.dt_float],
        attrs={"bound": PyCustomOpDef.dt_float},
    )
    def soft_clip(x, **attributes):
        bound = np.float32(attributes["bound"])
        return (bound * np.tanh(x / bound)).astype(np.float32)


def session_options():
    """``onnxruntime.SessionOptions`` able to run ``com.example.tonnx::SoftClip``."""
    import onnxruntime
    from onnxruntime_extensions import get_library_path

    _register()
    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(get_library_path())
    return options
