"""The program's inputs and outputs bound to the ONNX graph's: user inputs become graph
inputs, weights initializers; user outputs become graph outputs (named as asked), and what
forward mutates becomes an ``<name>.updated`` output after them. A complex input or output
is its real pairs [..., 2] (``_complex``)."""

from __future__ import annotations

from tonnx._errors import TonnxError, UnsupportedError
from tonnx.pipeline.interpret._complex import is_complex_value, pairs, record_pairs
from tonnx.pipeline.interpret._values import represented

#: torch.export output kinds carrying the new value of a tensor forward writes to
MUTATION_KINDS = ("BUFFER_MUTATION", "PARAMETER_MUTATION", "USER_INPUT_MUTATION")


def bind_inputs(interp, ep) -> None:
    g = interp.g
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    specs = ep.graph_signature.input_specs
    user = [p for p, s in zip(placeholders, specs) if s.kind.name == "USER_INPUT"]
    if len(interp.input_names) > len(user):
        raise TonnxError(
            f"input_names has {len(interp.input_names)} names but the model has "
            f"{len(user)} flattened inputs: {[p.name for p in user]}."
        )
    names = dict(zip(user, interp.input_names))
    for node, spec in zip(placeholders, specs):
        kind = spec.kind.name
        if kind == "USER_INPUT":
            _user_input(interp, node, names.get(node, node.name))
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            value = ep.state_dict.get(spec.target)
            if value is None:
                value = ep.constants[spec.target]
            interp.env[node] = g.make_initializer(spec.target, pairs(value), dedup=False)
        elif type(ep.constants.get(spec.target)).__name__ == "Generator":
            raise UnsupportedError(
                f"Input {node.name!r} is a torch.Generator (a random op's generator=): ONNX's "
                "random ops draw from the runtime's generator, never a torch.Generator's "
                "stream. Call the op without generator= or pass the noise as a model input."
            )
        else:
            raise UnsupportedError(
                f"Input {node.name!r} of kind {kind} (custom objects, effect tokens) "
                f"cannot be exported to ONNX."
            )


def _user_input(interp, node, name: str) -> None:
    val = node.meta.get("val")
    if is_complex_value(node):  # fed as torch.view_as_real(x): [..., 2]
        record_pairs(interp.g, "input", name, val.dtype)
    info = interp.namer.info(node)
    if hasattr(val, "dtype") or type(val).__name__ in ("SymInt", "SymFloat", "SymBool"):
        interp.env[node] = interp.g.make_tensor_input(name, *represented(info.dtypes[0], info.shapes[0]))
    else:
        # an int/float/None input torch.export specialized: its value is in the graph
        interp.env[node] = val


def bind_outputs(interp, ep, results) -> None:
    specs = ep.graph_signature.output_specs
    user_values = [r for r, s in zip(results, specs) if s.kind.name == "USER_OUTPUT"]
    mutations = [(r, s) for r, s in zip(results, specs) if s.kind.name in MUTATION_KINDS]
    others = sorted({s.kind.name for s in specs} - {"USER_OUTPUT", *MUTATION_KINDS})
    if others:
        raise UnsupportedError(
            f"The program has outputs of kind {others} (a joint training graph?): tonnx "
            f"exports inference programs, whose outputs are the model's and the new "
            f"values of what forward mutates."
        )
    if len(interp.output_names) > len(user_values):
        raise TonnxError(
            f"output_names has {len(interp.output_names)} names but the model has "
            f"{len(user_values)} flattened outputs."
        )
    seen: set[str] = set()
    for i, value in enumerate(user_values):
        _user_output(interp, i, value, seen)
    for value, spec in mutations:
        _mutation_output(interp, ep, value, spec, seen)


def _user_output(interp, i: int, value, seen: set[str]) -> None:
    g = interp.g
    if value is None:
        raise UnsupportedError(f"Output {i} of the model is None; ONNX has no None output.")
    if not hasattr(value, "meta") and not isinstance(value, (int, float, bool)):
        raise UnsupportedError(
            f"Output {i} of the model is the Python {type(value).__name__} {value!r}, "
            f"not a tensor: ONNX outputs are tensors. Return torch.tensor(...) or leave "
            f"it out of forward's result."
        )
    name = interp.map(value)
    if type(name) is not str:
        name = g.make_initializer("", name)
    info = interp.namer.info(value) if hasattr(value, "meta") else None
    wanted = interp.output_names[i] if i < len(interp.output_names) else None
    must_copy = name in seen or name in g.inputs or g.is_constant(name)
    if wanted and wanted != name:
        name = g.op.Identity(name, outputs=[wanted])
    elif must_copy:
        name = g.op.Identity(name, outputs=[g.unique_name(f"{name}_output")])
    seen.add(name)
    if is_complex_value(value):  # torch.view_as_real(output): [..., 2]
        record_pairs(g, "output", name, value.meta["val"].dtype)
    if info is not None and info.dtypes:
        g.make_tensor_output(name, *represented(info.dtypes[0], info.shapes[0]))
    else:
        g.make_tensor_output(name, g.get_type(name), g.get_shape(name))


def reserve_output_names(interp, ep) -> None:
    """The model's output names are taken before any node is named, so that a result
    inside the graph never takes one (``output_names=["linear"]`` of a Linear model);
    a name an input or weight already has is refused."""
    out = next(n for n in reversed(ep.graph.nodes) if n.op == "output")
    specs = ep.graph_signature.output_specs
    values = [v for v, s in zip(out.args[0], specs) if s.kind.name == "USER_OUTPUT"]
    for i, (wanted, value) in enumerate(zip(interp.output_names, values)):
        if not wanted or wanted == getattr(value, "name", None):
            continue  # that FX node is named so already: no copy needed
        if interp.g.has_name(wanted):
            raise TonnxError(
                f"output_names[{i}]={wanted!r} is already the name of an input or a "
                f"weight of the model; choose another output name."
            )
        interp.g.unique_name(wanted)


def _mutation_output(interp, ep, value, spec, seen: set[str]) -> None:
    """The new value of a buffer, parameter or input that forward writes to, as the
    output ``<its ONNX name>.updated``, after the model's outputs: ONNX has no state,
    and dropping the write would lose it silently."""
    g = interp.g
    mutated = spec.target
    if spec.kind.name == "USER_INPUT_MUTATION":
        placeholder = next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name == mutated)
        mutated = interp.env[placeholder]
    name = interp.map(value)
    info = interp.namer.info(value)
    wanted = g.unique_name(f"{mutated}.updated")
    name = g.op.Identity(name, outputs=[wanted])
    seen.add(name)
    g.make_tensor_output(name, *represented(info.dtypes[0], info.shapes[0]))
