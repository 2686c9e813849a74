"""nn.LSTM / nn.GRU / nn.RNN against torch eager, one ONNX LSTM/GRU/RNN node per layer.

onnxruntime's CPU LSTM/GRU/RNN kernels are float32 only: float64 runs in onnx's reference
evaluator. torch.export specializes the sequence length of these ops (their meta function
unrolls the time loop), so only the batch can be dynamic.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op

LSTM, GRU = "aten::lstm.input", "aten::gru.input"
RNN_TANH, RNN_RELU = "aten::rnn_tanh.input", "aten::rnn_relu.input"
CELLS = {
    "aten::lstm_cell.default": torch.nn.LSTMCell,
    "aten::gru_cell.default": torch.nn.GRUCell,
    "aten::rnn_tanh_cell.default": lambda i, h, **kw: torch.nn.RNNCell(
        i, h, nonlinearity="tanh", **kw
    ),
    "aten::rnn_relu_cell.default": lambda i, h, **kw: torch.nn.RNNCell(
        i, h, nonlinearity="relu", **kw
    ),
}
LAYERS = (LSTM, GRU, RNN_TANH, RNN_RELU)
COVERS = {
    "aten::lstm.input",
    "aten::gru.input",
    "aten::rnn_tanh.input",
    "aten::rnn_relu.input",
    "aten::lstm_cell.default",
    "aten::gru_cell.default",
    "aten::rnn_tanh_cell.default",
    "aten::rnn_relu_cell.default",
}

#: dtype -> runtime
RUNTIMES = {torch.float32: "onnxruntime", torch.float64: "reference"}


def _module(key: str, input_size: int, hidden: int, **kwargs) -> torch.nn.Module:
    if key == LSTM:
        return torch.nn.LSTM(input_size, hidden, **kwargs)
    if key == GRU:
        return torch.nn.GRU(input_size, hidden, **kwargs)
    nonlinearity = "tanh" if key == RNN_TANH else "relu"
    return torch.nn.RNN(input_size, hidden, nonlinearity=nonlinearity, **kwargs)


class _Call(torch.nn.Module):
    """Calls a recurrent module with or without initial states, returns every output."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *states):
        if not states:
            return self.rnn(x)
        return self.rnn(x, states if len(states) == 2 else states[0])


def _states(key: str, layers: int, dirs: int, batch: int, hidden: int, dtype) -> list:
    count = 2 if key == LSTM else 1
    return [torch.randn(layers * dirs, batch, hidden, dtype=dtype) for _ in range(count)]


@pytest.mark.parametrize("key", LAYERS)
@given(
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 5), st.integers(1, 6)),
    layers=st.integers(1, 3),
    bidirectional=st.booleans(),
    batch_first=st.booleans(),
    bias=st.booleans(),
    with_states=st.booleans(),
    dtype=st.sampled_from(list(RUNTIMES)),
)
def test_recurrent_module(key, sizes, layers, bidirectional, batch_first, bias, with_states, dtype):
    batch, seq, input_size, hidden = sizes
    if key == RNN_RELU:
        dtype = torch.float32  # the reference evaluator's RNN knows no Relu activation
    rnn = _module(
        key,
        input_size,
        hidden,
        num_layers=layers,
        bidirectional=bidirectional,
        batch_first=batch_first,
        bias=bias,
        dropout=0.3 if layers > 1 else 0.0,
    )
    model = _Call(rnn).eval().to(dtype)
    x = torch.randn(*((batch, seq) if batch_first else (seq, batch)), input_size, dtype=dtype)
    states = (
        _states(key, layers, 2 if bidirectional else 1, batch, hidden, dtype) if with_states else []
    )
    check_model(
        model, (x, *states), expect_ops=[key], runtime=RUNTIMES[dtype], atol=1e-5, rtol=1e-4
    )


@given(
    key=st.sampled_from([LSTM, GRU]),
    batch=st.integers(2, 4),
    other_batch=st.integers(1, 5),
    layers=st.integers(1, 2),
    bidirectional=st.booleans(),
    batch_first=st.booleans(),
    with_states=st.booleans(),
)
def test_recurrent_dynamic_batch(
    key, batch, other_batch, layers, bidirectional, batch_first, with_states
):
    dirs = 2 if bidirectional else 1
    model = _Call(
        _module(key, 3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    )

    def inputs(b):
        x = torch.randn(*((b, 5) if batch_first else (5, b)), 3)
        return (x, *(_states(key, layers, dirs, b, 4, torch.float32) if with_states else []))

    dynamic = {"x": {0 if batch_first else 1: "batch"}}
    if with_states:
        dynamic["states"] = ({1: "batch"},) * (2 if key == LSTM else 1)
    check_model(
        model.eval(),
        inputs(batch),
        expect_ops=[key],
        dynamic_shapes=dynamic,
        other_inputs=[inputs(other_batch)],
    )


@given(layers=st.integers(1, 2), bidirectional=st.booleans(), bias=st.booleans())
def test_lstm_weights_as_inputs(layers, bidirectional, bias):
    """Weights that are graph inputs, not constants, are reordered in the graph."""
    dirs = 2 if bidirectional else 1
    weights = []
    for layer in range(layers):
        size = 3 if layer == 0 else 4 * dirs
        for _ in range(dirs):
            weights += [torch.randn(16, size), torch.randn(16, 4)]
            weights += [torch.randn(16), torch.randn(16)] if bias else []

    def lstm(x, h, c, *params):
        return torch.lstm(x, (h, c), list(params), bias, layers, 0.0, False, bidirectional, False)

    states = [torch.randn(layers * dirs, 2, 4) for _ in range(2)]
    check_op(lstm, [torch.randn(5, 2, 3), *states, *weights], expect_op=LSTM)


class _Steps(torch.nn.Module):
    """A cell unrolled over a few steps, as seq2seq decoders use it."""

    def __init__(self, cell, steps: int):
        super().__init__()
        self.cell, self.steps = cell, steps

    def forward(self, x, *state):
        state = (state if len(state) == 2 else state[0]) if state else None
        outs = []
        for _ in range(self.steps):
            state = self.cell(x, state)
            outs.append(state[0] if isinstance(state, tuple) else state)
        return outs[-1], state


@pytest.mark.parametrize("key", sorted(CELLS))
@given(
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 6)),
    bias=st.booleans(),
    steps=st.integers(1, 3),
    with_state=st.booleans(),
    dtype=st.sampled_from(list(RUNTIMES)),
)
def test_cell(key, sizes, bias, steps, with_state, dtype):
    batch, input_size, hidden = sizes
    if key == "aten::rnn_relu_cell.default":
        dtype = torch.float32  # the reference evaluator's RNN knows no Relu activation
    model = _Steps(CELLS[key](input_size, hidden, bias=bias), steps).eval().to(dtype)
    count = 2 if key == "aten::lstm_cell.default" else 1
    states = [torch.randn(batch, hidden, dtype=dtype) for _ in range(count)] if with_state else []
    x = torch.randn(batch, input_size, dtype=dtype)
    check_model(
        model, (x, *states), expect_ops=[key], runtime=RUNTIMES[dtype], atol=1e-5, rtol=1e-4
    )


class _WordLanguageModel(torch.nn.Module):
    """pytorch/examples' word_language_model: Embedding, LSTM (or GRU), Linear decoder.

    Its nn.Dropout layers are left out: they are aten::dropout nodes of another family.
    """

    def __init__(self, kind: str, ntoken=20, ninp=8, nhid=6, nlayers=2):
        super().__init__()
        self.encoder = torch.nn.Embedding(ntoken, ninp)
        self.rnn = getattr(torch.nn, kind)(ninp, nhid, nlayers, dropout=0.2)
        self.decoder = torch.nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return self.decoder(output), hidden


@given(kind=st.sampled_from(["LSTM", "GRU"]), seq=st.integers(1, 6), batch=st.integers(1, 4))
def test_word_language_model(kind, seq, batch):
    model = _WordLanguageModel(kind).eval()
    tokens = torch.randint(0, 20, (seq, batch))
    hidden = torch.randn(2, batch, 6)
    hidden = (hidden, torch.randn(2, batch, 6)) if kind == "LSTM" else hidden
    key = LSTM if kind == "LSTM" else GRU
    check_model(model, (tokens, hidden), expect_ops=[key])


def test_lstm_proj_size_is_unsupported():
    model = _Call(torch.nn.LSTM(3, 4, proj_size=2)).eval()
    with pytest.raises(tonnx.UnsupportedError, match="proj_size"):
        check_model(model, (torch.randn(5, 2, 3),), expect_ops=[LSTM])


def test_dropout_in_training_is_unsupported():
    model = _Call(torch.nn.GRU(3, 4, num_layers=2, dropout=0.5)).train()
    with pytest.raises(tonnx.UnsupportedError, match="dropout"):
        check_model(model, (torch.randn(5, 2, 3), torch.randn(2, 2, 4)), expect_ops=[GRU])
