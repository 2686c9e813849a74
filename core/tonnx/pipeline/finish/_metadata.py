"""Model metadata saying where an ONNX model came from (``pkg.tonnx.*`` metadata_props).

- ``pkg.tonnx.version``: the tonnx that wrote it;
- ``pkg.tonnx.packs_used``: each pack that converted nodes, its version and node count;
- ``pkg.tonnx.graph_signature``: JSON ``{"inputs": [...], "outputs": [...]}``, one entry
  per torch.export input/output with its kind (``USER_INPUT``, ``PARAMETER``, ``BUFFER``,
  ``USER_OUTPUT``, ``BUFFER_MUTATION``...), its torch target and its ONNX name if the model
  has it;
- ``pkg.tonnx.parameters``: JSON ``{onnx initializer: state_dict name}`` for the weights
  still in the model (so weights can be mapped back to the module after export);
- ``pkg.tonnx.min_<runtime>`` (``pkg.tonnx.min_onnxruntime``): the oldest version of that
  runtime which runs the nodes of a pack's custom domains as the pack meant
  (``PackSpec.runtime_requirements``), the highest over the packs; absent without such nodes.
"""

from __future__ import annotations

import json
import re
from collections import Counter

WEIGHT_KINDS = ("PARAMETER", "BUFFER", "CONSTANT_TENSOR")


def graph_metadata(ep, interpreter, manager, g) -> dict[str, str]:
    """The metadata_props entries for a converted program (read after optimization)."""
    from tonnx._version import __version__

    inputs, parameters = _inputs(ep, interpreter, g)
    return {
        "pkg.tonnx.version": __version__,
        "pkg.tonnx.packs_used": _packs_used(interpreter, manager),
        "pkg.tonnx.graph_signature": json.dumps({"inputs": inputs, "outputs": _outputs(ep, g)}),
        "pkg.tonnx.parameters": json.dumps(parameters),
        **_min_runtimes(manager, g),
    }


def _nodes(g) -> list:
    found = []
    for node in g.nodes:
        found.append(node)
        for sub in node.subgraphs():
            found.extend(_nodes(sub))
    return found


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def _min_runtimes(manager, g) -> dict[str, str]:
    """``pkg.tonnx.min_<runtime>``: what the nodes of the packs' custom domains need."""
    nodes = _nodes(g)
    domains = {node.domain for node in nodes if node.domain}
    needs: dict[str, str] = {}
    for spec in manager.specs.values():
        if spec.runtime_requirements is None or not domains & set(spec.domains):
            continue
        mine = [node for node in nodes if node.domain in spec.domains]
        for runtime, version in dict(spec.runtime_requirements(mine)).items():
            if runtime not in needs or _version_key(version) > _version_key(needs[runtime]):
                needs[runtime] = version
    return {f"pkg.tonnx.min_{runtime}": version for runtime, version in sorted(needs.items())}


def _inputs(ep, interpreter, g) -> tuple[list[dict], dict[str, str]]:
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    kept = set(g.inputs) | set(g.constants)
    entries, parameters = [], {}
    for node, spec in zip(placeholders, ep.graph_signature.input_specs):
        entry = {"kind": spec.kind.name, "fx": node.name}
        if spec.target is not None:
            entry["target"] = str(spec.target)
        value = interpreter.env.get(node)
        if type(value) is str and value in kept:
            entry["onnx"] = value
            if spec.kind.name in WEIGHT_KINDS:
                parameters[value] = str(spec.target)
        entries.append(entry)
    return entries, parameters


def _outputs(ep, g) -> list[dict]:
    """The model's outputs come first, then the new values of what forward mutates."""
    specs = ep.graph_signature.output_specs
    n_user = sum(spec.kind.name == "USER_OUTPUT" for spec in specs)
    user, mutated = iter(g.outputs[:n_user]), iter(g.outputs[n_user:])
    entries = []
    for spec in specs:
        entry = {"kind": spec.kind.name}
        if spec.target is not None:
            entry["target"] = str(spec.target)
        entry["onnx"] = next(user if spec.kind.name == "USER_OUTPUT" else mutated, None)
        entries.append(entry)
    return entries


def _packs_used(interpreter, manager) -> str:
    counts = Counter(cand.pack for cand in interpreter.plan.values())
    return ", ".join(
        f"{pack} {manager.versions.get(pack, '')} ({n} node{'s' if n > 1 else ''})".replace("  ", " ")
        for pack, n in counts.most_common()
    )
