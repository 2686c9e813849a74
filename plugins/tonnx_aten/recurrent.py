"""RNN, LSTM, GRU and their cells: one ONNX LSTM/GRU/RNN node per layer (both directions).

torch keeps each layer's gates as row blocks of its weights in its own order; ONNX wants
them in another one (LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h with
``linear_before_reset=1``, which is torch's GRU). Weights are reordered once, with numpy,
when they are constants (module parameters), else by a Gather in the graph. Nodes use
``layout=0`` (sequence first): a batch-first input and output are transposed around them.
"""

from __future__ import annotations

import numpy as np

from tonnx import Converter, UnsupportedError
from tonnx.converters import named, numpy_dtype

#: torch's gate blocks listed in ONNX's order.
_LSTM_GATES = (0, 3, 1, 2)
_GRU_GATES = (1, 0, 2)
_RNN_GATES = (0,)


def _rows(gates: tuple, hidden: int) -> np.ndarray:
    """Row indices putting torch's gate blocks of ``hidden`` rows in ONNX's order."""
    return np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in gates])


def _stacked(g, pieces: list[list[str]], rows: np.ndarray) -> str:
    """[num_directions, ...]: per direction, its pieces' reordered rows, concatenated."""
    names = [p for per_dir in pieces for p in per_dir]
    if all(g.is_constant(n) for n in names):
        value = np.stack(
            [np.concatenate([g.get_constant(p)[rows] for p in per_dir]) for per_dir in pieces]
        )
        return g.make_initializer("", value)
    per_dirs = [
        g.op.Unsqueeze(_concat0(g, [g.op.Gather(p, rows, axis=0) for p in per_dir]), [0])
        for per_dir in pieces
    ]
    return _concat0(g, per_dirs)


def _concat0(g, names: list[str]) -> str:
    return names[0] if len(names) == 1 else g.op.Concat(*names, axis=0)


def _layer_weights(g, group: list[str], dirs: int, has_biases: bool, gates: tuple, hidden: int):
    """(W, R, B) of one layer from torch's [w_ih, w_hh, (b_ih, b_hh)] per direction."""
    per = 4 if has_biases else 2
    by_dir = [group[d * per : (d + 1) * per] for d in range(dirs)]
    rows = _rows(gates, hidden)
    w = _stacked(g, [[p[0]] for p in by_dir], rows)
    r = _stacked(g, [[p[1]] for p in by_dir], rows)
    b = _stacked(g, [[p[2], p[3]] for p in by_dir], rows) if has_biases else ""
    return w, r, b


def _zeros(g, state: str) -> bool:
    """True for a constant all-zero state, which ONNX nodes take as an omitted input."""
    return g.is_zero_constant(state, max_elements=None)


def _layer_state(g, state: str, layer: int, dirs: int, num_layers: int) -> str:
    """The initial state of one layer ([dirs, batch, hidden]); "" for constant zeros."""
    if _zeros(g, state):
        return ""
    if num_layers == 1:
        return state
    starts, ends = np.array([layer * dirs], np.int64), np.array([(layer + 1) * dirs], np.int64)
    return g.op.Slice(state, starts, ends, np.array([0], np.int64))


def _merged(g, y: str, dirs: int, hidden: int, batch_first: bool) -> str:
    """ONNX's Y [seq, dirs, batch, hidden] as torch's [seq, batch, dirs * hidden] (or batch first)."""
    if dirs == 1 and not batch_first:
        return g.op.Squeeze(y, np.array([1], np.int64))
    perm = [2, 0, 1, 3] if batch_first else [0, 2, 1, 3]
    return g.op.Reshape(g.op.Transpose(y, perm=perm), np.array([0, 0, dirs * hidden], np.int64))


def _node_outputs(g, op_type: str, with_y: bool, states: int) -> list[str]:
    """Output names of a node: Y only when used, the final states always (they are small).

    An omitted output is named "", and onnx's reference evaluator stores it under that
    name, then feeds it to the next node's omitted inputs: only large Y is ever omitted.
    """
    base = op_type.lower()
    y = g.unique_name(f"{base}_y") if with_y else ""
    return [y, *(g.unique_name(f"{base}_state") for _ in range(states))]


def _check(params: list, has_biases: bool, num_layers: int, dirs: int, dropout, train) -> None:
    per = 4 if has_biases else 2
    if len(params) != num_layers * dirs * per:
        raise UnsupportedError(
            f"LSTM with proj_size > 0 ({len(params)} weights for {num_layers} layer(s) and "
            f"{dirs} direction(s)) has no ONNX equivalent; use proj_size=0."
        )
    if train and dropout and num_layers > 1:
        raise UnsupportedError(
            f"recurrent layer with dropout={dropout} in training mode is random; export the "
            f"model in eval mode."
        )


def _recurrent(g, outputs, op_type, gates, states, input, params, flags, **attributes):
    """Stacks one ONNX node per layer; returns (output, h_n[, c_n]) as ``outputs`` asks."""
    has_biases, num_layers, dropout, train, bidirectional, batch_first = flags
    dirs = 2 if bidirectional else 1
    _check(params, has_biases, num_layers, dirs, dropout, train)
    hidden = g.get_shape(params[1])[1]
    per = (4 if has_biases else 2) * dirs
    direction = "bidirectional" if bidirectional else "forward"
    x = g.op.Transpose(input, perm=[1, 0, 2]) if batch_first else input
    finals = [[] for _ in states]
    for layer in range(num_layers):
        last = layer == num_layers - 1
        w, r, b = _layer_weights(
            g, params[layer * per : (layer + 1) * per], dirs, has_biases, gates, hidden
        )
        init = [_layer_state(g, s, layer, dirs, num_layers) for s in states]
        names = _node_outputs(g, op_type, not last or bool(outputs[0]), len(states))
        results = g.make_node(
            op_type,
            [x, w, r, b, "", *init],
            names,
            hidden_size=hidden,
            direction=direction,
            **attributes,
        )
        for final, result in zip(finals, results[1:]):
            final.append(result)
        if not last:
            x = _merged(g, results[0], dirs, hidden, False)
    output = named(g, _merged(g, results[0], dirs, hidden, batch_first), outputs[0]) if outputs[0] else ""
    states_out = [named(g, _concat0(g, f), o) if o else "" for f, o in zip(finals, outputs[1:])]
    return (output, *states_out)


# aten::lstm.input
def aten_lstm_input(
    g,
    sts,
    outputs,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,
    bidirectional,
    batch_first,
):
    "lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)"
    flags = (has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return _recurrent(g, outputs, "LSTM", _LSTM_GATES, list(hx), input, params, flags)


# aten::gru.input
def aten_gru_input(
    g,
    sts,
    outputs,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,
    bidirectional,
    batch_first,
):
    "gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"
    flags = (has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return _recurrent(
        g, outputs, "GRU", _GRU_GATES, [hx], input, params, flags, linear_before_reset=1
    )


def _rnn(g, outputs, activation, input, hx, params, flags):
    activations = [activation] * (2 if flags[4] else 1)
    return _recurrent(
        g, outputs, "RNN", _RNN_GATES, [hx], input, params, flags, activations=activations
    )


# aten::rnn_tanh.input
def aten_rnn_tanh_input(
    g,
    sts,
    outputs,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,
    bidirectional,
    batch_first,
):
    "rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"
    flags = (has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return _rnn(g, outputs, "Tanh", input, hx, params, flags)


# aten::rnn_relu.input
def aten_rnn_relu_input(
    g,
    sts,
    outputs,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,
    bidirectional,
    batch_first,
):
    "rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"
    flags = (has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return _rnn(g, outputs, "Relu", input, hx, params, flags)


# -- cells: one time step, an ONNX node over a sequence of length 1 -------------------------


def _cell(g, outputs, op_type, gates, input, states, weights, **attributes):
    """(h', [c']) of one step from torch's cell weights [w_ih, w_hh, b_ih, b_hh]."""
    w_ih, w_hh, b_ih, b_hh = weights
    hidden = g.get_shape(w_hh)[1]
    rows = _rows(gates, hidden)
    w, r = _stacked(g, [[w_ih]], rows), _stacked(g, [[w_hh]], rows)
    b = ""
    if b_ih is not None or b_hh is not None:
        zeros = g.make_initializer("", np.zeros(len(rows), dtype=numpy_dtype(g.get_type(w_ih))))
        b = _stacked(g, [[zeros if b_ih is None else b_ih, zeros if b_hh is None else b_hh]], rows)
    init = ["" if _zeros(g, s) else g.op.Unsqueeze(s, np.array([0], np.int64)) for s in states]
    names = _node_outputs(g, op_type, True, len(states))
    x = g.op.Unsqueeze(input, np.array([0], np.int64))
    results = g.make_node(op_type, [x, w, r, b, "", *init], names, hidden_size=hidden, **attributes)
    squeeze = np.array([0], np.int64)
    return tuple(
        g.op.Squeeze(y, squeeze, outputs=[o]) if o else "" for y, o in zip(results[1:], outputs)
    )


# aten::lstm_cell.default
def aten_lstm_cell(g, sts, outputs, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    "lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> (Tensor, Tensor)"
    weights = (w_ih, w_hh, b_ih, b_hh)
    return _cell(g, outputs, "LSTM", _LSTM_GATES, input, list(hx), weights)


# aten::gru_cell.default
def aten_gru_cell(g, sts, outputs, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    "gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"
    weights = (w_ih, w_hh, b_ih, b_hh)
    return _cell(g, outputs, "GRU", _GRU_GATES, input, [hx], weights, linear_before_reset=1)[0]


# aten::rnn_tanh_cell.default
def aten_rnn_tanh_cell(g, sts, outputs, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    "rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"
    weights = (w_ih, w_hh, b_ih, b_hh)
    return _cell(g, outputs, "RNN", _RNN_GATES, input, [hx], weights, activations=["Tanh"])[0]


# aten::rnn_relu_cell.default
def aten_rnn_relu_cell(g, sts, outputs, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    "rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor"
    weights = (w_ih, w_hh, b_ih, b_hh)
    return _cell(g, outputs, "RNN", _RNN_GATES, input, [hx], weights, activations=["Relu"])[0]


CONVERTERS = (
    Converter("aten::lstm.input", aten_lstm_input),
    Converter("aten::gru.input", aten_gru_input),
    Converter("aten::rnn_tanh.input", aten_rnn_tanh_input),
    Converter("aten::rnn_relu.input", aten_rnn_relu_input),
    Converter("aten::lstm_cell.default", aten_lstm_cell),
    Converter("aten::gru_cell.default", aten_gru_cell),
    Converter("aten::rnn_tanh_cell.default", aten_rnn_tanh_cell),
    Converter("aten::rnn_relu_cell.default", aten_rnn_relu_cell),
)
