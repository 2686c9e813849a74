"""When torch.export stops, tonnx's error names the model's line and what to try
(pipeline/capture/_export_failure.py); torch's own error follows."""

from __future__ import annotations

import inspect

import pytest
import torch

import tonnx


class BranchesOnValues(torch.nn.Module):
    def forward(self, x):
        if (x > 0).any():  # data-dependent: one traced program cannot hold both choices
            return x + 1
        return x - 1


def _helper(x, y):
    return x + y  # shapes (2, 3) and (2, 4) do not broadcast


class CallsAHelper(torch.nn.Module):
    def forward(self, x):
        return _helper(x, torch.zeros(2, 4))


def _line(obj, text: str) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_data_dependent_branch_names_the_line_and_the_way_around():
    with pytest.raises(tonnx.ExportFailedError) as info:
        tonnx.to_onnx(BranchesOnValues(), (torch.randn(2, 3),))
    message = str(info.value)
    line = _line(BranchesOnValues.forward, "if (x > 0).any()")
    where = f"{__file__}:{line} in forward: `if (x > 0).any():"
    assert message.startswith(f"torch.export stopped at {where}")
    assert "torch.where, torch.cond" in message and "export_patches" in message
    assert "draft_export" in message
    assert "torch.export's error: GuardOnDataDependentSymNode" in message


def test_other_failure_names_the_helper_and_the_forward_that_called_it():
    with pytest.raises(tonnx.ExportFailedError) as info:
        tonnx.to_onnx(CallsAHelper(), (torch.randn(2, 3),))
    message = str(info.value)
    helper = f"{__file__}:{_line(_helper, 'return x + y')} in _helper: `return x + y"
    caller = f"{__file__}:{_line(CallsAHelper.forward, 'return _helper(')} in forward"
    assert f"stopped at {helper}" in message and f"called from {caller}" in message
    assert "run the model eagerly on the same inputs" in message
    assert "torch.export's error: RuntimeError" in message


def test_installed_package_under_the_stdlib_directory_is_model_code():
    """Without a venv, site-packages lies inside the stdlib directory: transformers' files
    there are the model's, not the framework's (CI's interpreter is such a one)."""
    import sysconfig

    from tonnx.pipeline.capture._export_failure import _framework

    stdlib = sysconfig.get_paths()["stdlib"]
    installed = f"{stdlib}/site-packages/transformers/models/llama/modeling_llama.py"
    purelib = f"{sysconfig.get_paths()['purelib']}/transformers/modeling_utils.py"
    assert not _framework(installed)
    assert not _framework(purelib)
    assert _framework(f"{stdlib}/contextlib.py")
    assert _framework(torch.__file__) and _framework("<string>")


def test_a_packs_file_is_the_exporters_not_the_models():
    """A pack's export patch or fake kernel in the traceback is not where the model stopped:
    the message names the model's line (dory's shapes failed in the transformers pack's
    attention fake kernel, and the message named that kernel as the model's line)."""
    import tonnx_aten
    import tonnx_transformers.llm.traced_attention as traced
    from tonnx.pipeline.capture._export_failure import _framework

    assert _framework(traced.__file__) and _framework(tonnx_aten.__file__)
    assert not _framework(__file__)  # the user's own code
