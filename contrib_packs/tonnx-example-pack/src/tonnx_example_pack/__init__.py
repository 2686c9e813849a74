"""tonnx-example-pack: the template of an in-house converter pack for a custom op.

- :mod:`.ops` defines the PyTorch op ``tonnx_example::soft_clip`` with ``torch.library``
  (and its fake kernel, so ``torch.export`` traces it);
- :mod:`.converters` converts it to ``com.example.tonnx::SoftClip``, a node of the pack's
  own ONNX domain;
- :mod:`.reference` runs that node in onnx's reference evaluator
  (``tonnx.testing.run_reference``), :mod:`.ort` in onnxruntime (``session_options()``).

tonnx finds the pack through the ``tonnx.packs`` entry point of its pyproject.toml and
calls :func:`tonnx_pack`; importing this module stays cheap (no torch, no onnxruntime).
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"
#: The pack's ONNX domain and its version, declared in the PackSpec and the exported model.
DOMAIN = "com.example.tonnx"
DOMAIN_VERSION = 1


def _load() -> list:
    from .converters import CONVERTERS

    return list(CONVERTERS)


def _reference_kernels() -> list:
    from .reference import KERNELS

    return list(KERNELS)


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="example",
        load=_load,
        version=__version__,
        priority=150,
        domains={DOMAIN: DOMAIN_VERSION},
        description="tonnx_example::soft_clip as com.example.tonnx::SoftClip (template pack)",
        reference_kernels=_reference_kernels,
    )


def session_options():
    """``onnxruntime.SessionOptions`` with the pack's kernels registered (onnxruntime-extensions)."""
    from .ort import session_options

    return session_options()


def demo():
    """A small model calling the pack's op, and its inputs: ``(torch.nn.Module, tuple)``."""
    from .ops import demo

    return demo()
