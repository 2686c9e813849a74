"""Which onnxruntime the pack's graph is for, and what each version runs exactly.

The target is ``Dispatcher(target_runtime={"onnxruntime": "1.31.1"})`` when the export
names one (export here, run elsewhere), else the installed onnxruntime; with none
installed the pack assumes the oldest version it supports (:data:`OLDEST`), whose graph
every supported version runs. What changed between the versions, for the ops used here
(onnxruntime's operator schemas, and measured in tests/test_ortcontrib_target.py):

- ``GroupQueryAttention``: 1.32 added input 16, ``query_seqlens``, with which a step of
  several new tokens after a KV cache runs for every row of a batch; 1.31 refuses a
  17-input node when the session opens, and without that input allows several new tokens
  after a cache only for a batch of one. Before 1.32 attention with a cache keeps the
  standard graph; attention without a cache is the same op on both.
- ``MoE``: registered ``MayInplace(0, 0)``, so onnxruntime may give its output the buffer of
  its input when nothing reads the input afterwards (a static-shape graph where the tokens
  are a Reshape of the norm's output, as torch 2.13 exports transformers' blocks). 1.31.1's
  kernel then returns zeros with ``normalize_routing_weights=0`` (it clears the output
  before reading the tokens); with ``normalize_routing_weights=1`` it is exact, and 1.32.0
  is exact with both (measured on a 4-node graph, tests/test_ortcontrib_moe.py). Before
  1.32 the pack emits the renormalized op times the top-k weights' sum.
- ``RotaryEmbedding``: the forms emitted here compute the same on 1.31.1 and 1.32.0.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tonnx import TonnxError

#: the oldest onnxruntime the pack supports and tests (its pyproject says so too)
OLDEST = (1, 31, 1)
#: GroupQueryAttention's ``query_seqlens`` input (a KV-cache step of several tokens)
QUERY_SEQLENS = (1, 32, 0)
#: MoE exact with ``normalize_routing_weights=0`` when run in place over its input
UNNORMALIZED_MOE = (1, 32, 0)
#: onnxruntime's distributions on PyPI (one module, ``onnxruntime``)
_DISTRIBUTIONS = (
    "onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-qnn",
)  # fmt: skip


def text(version: tuple[int, ...]) -> str:
    return ".".join(str(v) for v in version)


def parse(version: str, where: str) -> tuple[int, int, int]:
    """``"1.31.1"`` -> (1, 31, 1); ``"1.32"`` -> (1, 32, 0); a dev or local suffix ignored."""
    found = re.match(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?", version)
    if found is None:
        raise TonnxError(f"{where}: {version!r} is not an onnxruntime version such as '1.31.1'.")
    return int(found[1]), int(found[2]), int(found[3] or 0)


def installed() -> str | None:
    """The installed onnxruntime's version, None when none is installed."""
    for name in _DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@dataclass(frozen=True)
class Target:
    """The onnxruntime version the graph must be exact on, and where that choice came from."""

    version: tuple[int, int, int]
    source: str

    @property
    def gqa_with_cache(self) -> bool:
        """GroupQueryAttention after a KV cache (its ``query_seqlens`` input)."""
        return self.version >= QUERY_SEQLENS

    @property
    def unnormalized_moe(self) -> bool:
        """MoE with ``normalize_routing_weights=0`` exact wherever onnxruntime places its output."""
        return self.version >= UNNORMALIZED_MOE

    def __str__(self) -> str:
        return f"onnxruntime {text(self.version)} ({self.source})"


def resolve(target_runtime: Mapping[str, str]) -> Target:
    """The target an export names (``target_runtime``), else the installed onnxruntime,
    else :data:`OLDEST`; older than :data:`OLDEST` is an error with the way out."""
    named = target_runtime.get("onnxruntime")
    found = installed()
    if named is not None:
        target = Target(parse(named, "target_runtime['onnxruntime']"), "named by target_runtime")
    elif found is not None:
        target = Target(parse(found, "the installed onnxruntime"), "installed")
    else:
        return Target(OLDEST, "assumed: no onnxruntime installed, the oldest the pack supports")
    if target.version < OLDEST:
        raise TonnxError(
            f"The ortcontrib pack targets onnxruntime {text(OLDEST)} or later; the target is "
            f"{target}. Name a newer one (Dispatcher(target_runtime={{'onnxruntime': "
            f"'{text(OLDEST)}'}})) or block the pack (packs=['no:ortcontrib'], "
            f"TONNX_PACKS=no:ortcontrib) for the standard-domain graph."
        )
    return target


def requirements(nodes: list) -> dict[str, str]:
    """The oldest onnxruntime running these com.microsoft nodes as the pack meant them."""
    needed = OLDEST
    for node in nodes:
        if node.op_type == "GroupQueryAttention" and len(node.inputs) > 16 and node.inputs[16]:
            needed = max(needed, QUERY_SEQLENS)
        if node.op_type == "MoE" and not node.attributes.get("normalize_routing_weights", 0):
            needed = max(needed, UNNORMALIZED_MOE)
    return {"onnxruntime": text(needed)}
