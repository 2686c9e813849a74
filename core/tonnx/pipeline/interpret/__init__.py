"""The FX graph interpreter: ExportedProgram -> GraphBuilder."""

from tonnx.pipeline.interpret._interpreter import Interpreter
from tonnx.pipeline.interpret._values import ResultInfo, ShapeNamer

__all__ = ["Interpreter", "ResultInfo", "ShapeNamer"]
