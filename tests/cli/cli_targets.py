"""Callables ``tonnx export`` loads in tests/cli (each follows or breaks the contract on purpose)."""

from __future__ import annotations

import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 8)
        self.b = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def mlp():
    """(model, args)"""
    torch.manual_seed(0)
    return MLP().eval(), (torch.rand(4, 3),)


def mlp_dict():
    """The dict form, with its own names and dynamic shapes."""
    model, args = mlp()
    return {"model": model, "args": args, "dynamic_shapes": {"x": {0: "batch"}},
            "input_names": ["features"], "output_names": ["scores"]}


class TwoInputs(torch.nn.Module):
    def forward(self, x, y, *, scale):
        return x * scale + y, x - y


def two_inputs():
    """(model, args, kwargs): two outputs, a keyword tensor."""
    return TwoInputs(), (torch.rand(2, 3), torch.rand(2, 3)), {"scale": torch.rand(3)}


_LIB = torch.library.Library("tonnx_cli_test", "FRAGMENT")
if not hasattr(torch.ops.tonnx_cli_test, "mystery"):
    _LIB.define("mystery(Tensor x) -> Tensor")
    _LIB.impl("mystery", lambda x: x + 1, "CompositeExplicitAutograd")
    _LIB.impl("mystery", lambda x: torch.empty_like(x), "Meta")


class Mystery(torch.nn.Module):
    def forward(self, x):
        y = torch.ops.tonnx_cli_test.mystery(x)
        return torch.ops.tonnx_cli_test.mystery(y.relu())


def missing_converter():
    """An op no pack converts (a custom op defined above)."""
    return Mystery(), (torch.rand(2, 3),)


class DataDependent(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # torch.export cannot trace a branch on data
            return x + 1
        return x - 1


def export_fails():
    return DataDependent(), (torch.rand(2, 3),)


class Drifting(torch.nn.Module):
    """Adds 1 only while torch.export traces it: the ONNX model differs from eager."""

    def forward(self, x):
        if torch.compiler.is_exporting():
            return x + 1
        return x


def verify_fails():
    return Drifting(), (torch.rand(2, 3),)


def not_a_tuple():
    return MLP()


def raises():
    raise RuntimeError("cannot build the model today")


class Angle(torch.nn.Module):
    def forward(self, x):
        return torch.angle(x) * 2


def needs_fallback():
    """An op only the onnxscript fallback pack converts (aten::angle)."""
    return Angle(), (torch.randn(3, 4),)


class Counter(torch.nn.Module):
    """docs/user-guide.md's model that updates a buffer: its ONNX model has count.updated."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count += 1
        return x * self.count


def counter():
    return Counter(), (torch.rand(2, 3),)


def terminated():
    """(model, args) whose export gets SIGTERM once the model's temporary file is written:
    the writer is wrapped here, in the user's code, to time the signal."""
    import signal

    from tonnx.pipeline.write import _file_writer

    original = _file_writer.write_inline

    def write_then_signal(*args, **kwargs):
        written = original(*args, **kwargs)
        signal.raise_signal(signal.SIGTERM)
        return written

    _file_writer.write_inline = write_then_signal
    return mlp()
