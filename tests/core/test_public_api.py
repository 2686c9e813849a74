"""The public API is pinned: additions and removals are deliberate."""

from __future__ import annotations

import subprocess
import sys

import tonnx


def test_public_names():
    assert sorted(tonnx.__all__) == sorted(
        [
            "__version__",
            "to_onnx",
            "export_patches",
            "pretty",
            "export_program",
            "convert",
            "GraphBuilder",
            "Converter",
            "Dispatcher",
            "PackSpec",
            "hookimpl",
            "TonnxError",
            "ConversionError",
            "ConverterConflictError",
            "ConverterNotFoundError",
            "ConverterOutputError",
            "DynamicShapesError",
            "ExportFailedError",
            "OutputFileError",
            "PackLoadError",
            "UnsupportedError",
        ]
    )
    for name in tonnx.__all__:
        assert getattr(tonnx, name) is not None


def test_import_does_not_import_torch_or_packs():
    code = "import sys, tonnx; print('torch' in sys.modules, 'tonnx_aten' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_cli_packs_and_explain():
    out = subprocess.run(
        [sys.executable, "-m", "tonnx.cli", "explain", "aten.mm.default"],
        capture_output=True, text=True, check=True,
    )
    assert "winner: tonnx_aten.linalg.aten_mm from pack 'aten'" in out.stdout
    out = subprocess.run([sys.executable, "-m", "tonnx.cli", "packs"], capture_output=True, text=True, check=True)
    assert "aten" in out.stdout and "enabled" in out.stdout


def test_converter_authoring_surface():
    """What a converter may import from tonnx (docs/writing-converters.md) is pinned too."""
    import tonnx.converters

    assert sorted(tonnx.converters.__all__) == sorted(
        [
            "Converter",
            "RewriteContext",
            "RewriteRule",
            "UnsupportedError",
            "cast",
            "conjugate",
            "convert_graph",
            "dft",
            "is_float",
            "named",
            "numpy_dtype",
            "onnx_type_from_numpy",
            "onnx_type_from_torch",
            "op_accepts",
            "operand",
            "opmath_type",
            "output_used",
            "quadrant_atan",
            "shape_of",
            "shape_tensor",
            "signbit",
            "torch_dtype",
            "trunc",
            "unused_output",
        ]
    )
    for name in tonnx.converters.__all__:
        assert getattr(tonnx.converters, name) is not None


def test_toolkit_surface():
    """What a pack's command or pipeline may import from tonnx (tonnx.toolkit) is pinned."""
    import tonnx.toolkit

    assert sorted(tonnx.toolkit.__all__) == sorted(
        [
            "Derivation",
            "Progress",
            "SafetensorsWeights",
            "TargetError",
            "Terminated",
            "exit_codes",
            "has_data",
            "import_module_or_file",
            "sigterm_raises",
        ]
    )
    for name in tonnx.toolkit.__all__:
        assert getattr(tonnx.toolkit, name) is not None
