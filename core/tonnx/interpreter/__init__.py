"""The FX graph interpreter: ExportedProgram -> GraphBuilder."""

from ._interpreter import Interpreter
from ._values import ResultInfo, ShapeNamer

__all__ = ["Interpreter", "ResultInfo", "ShapeNamer"]
