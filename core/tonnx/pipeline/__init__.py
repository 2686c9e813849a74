"""The export pipeline: ``to_onnx`` = capture -> prepare -> interpret -> finish -> write.

Each step is a subpackage; ``_to_onnx`` calls them in order, ``_program`` publishes the two
halves (``export_program``: capture; ``convert``: the rest).
"""

from tonnx.pipeline._program import convert, export_patches, export_program
from tonnx.pipeline._to_onnx import convert_program, to_onnx

__all__ = ["convert", "convert_program", "export_patches", "export_program", "to_onnx"]
