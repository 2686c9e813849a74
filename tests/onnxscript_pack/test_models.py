"""Proof that the onnxscript fallback is real: models exported with the aten pack blocked.

Every op of these programs is converted by onnxscript's torchlib through the fallback pack
(``Dispatcher(packs=["no:aten"], fallback="onnxscript")``) and onnxruntime matches torch.
"""

from __future__ import annotations

import warnings

import onnx
import pytest
import torch

import tonnx
from tests.models import transformer_models, vision_nets
from tests.models.test_seed_examples import (
    MLP_DYNAMIC,
    LinearCelu,
    MLPModel,
    Neuron,
    _mlp_inputs,
)
from tonnx.testing import assert_close, check_model, run_onnxruntime

# ortcontrib (a contrib pack, if installed) would convert attention: blocked as well
FALLBACK_ONLY = tonnx.Dispatcher(packs=["no:aten", "no:ortcontrib"], fallback="onnxscript")


def _rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def _all_through_fallback(onx) -> dict:
    """Every node was made by the onnxscript pack; returns the model's metadata."""
    labels = {
        p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"
    }
    assert labels and all(lab.startswith("onnxscript:") for lab in labels), labels
    props = {p.key: p.value for p in onx.metadata_props}
    assert "onnxscript" in props["pkg.tonnx.packs"] and "aten" not in props["pkg.tonnx.packs"]
    return props


def _check(model, args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onx = check_model(model, args, dispatcher=FALLBACK_ONLY, **kwargs)
    onnx.checker.check_model(onx)
    props = _all_through_fallback(onx)
    summaries = [w for w in caught if "converted by a fallback pack" in str(w.message)]
    assert len(summaries) == 1, [str(w.message) for w in caught]
    assert props["pkg.tonnx.fallback_ops"] in str(summaries[0].message)
    return onx, props


def test_seed_neuron_dynamic_batch():
    torch.manual_seed(0)
    onx, props = _check(
        Neuron().eval(),
        (_rand(4, 3),),
        dynamic_shapes=({0: "batch"},),
        other_inputs=[(_rand(9, 3, seed=1),)],
    )
    assert props["pkg.tonnx.fallback_ops"] == (
        "aten::linear.default (onnxscript) x1, aten::sigmoid.default (onnxscript) x1"
    )
    assert onx.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_seed_mlp_dict_list_inputs():
    torch.manual_seed(0)
    _check(MLPModel().eval(), _mlp_inputs(7), dynamic_shapes=MLP_DYNAMIC, other_inputs=[_mlp_inputs(3, 5)])


def test_seed_celu():
    torch.manual_seed(0)
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(0)) * 3
    onx, _ = _check(LinearCelu().eval(), (x,))
    assert "Celu" in {n.op_type for n in onx.graph.node}


def test_resnet18():
    """A CNN: conv, batch_norm (aliased), in-place relu_/add_, max pooling, global pooling."""
    _check(vision_nets.resnet18(), (_rand(2, 3, 64, 64),), atol=1e-4, rtol=1e-4)


def test_llama_one_layer():
    """A transformer, decomposed to Core ATen first as torch.onnx does: torchlib's
    scaled_dot_product_attention is excluded (it differs from torch on fully masked rows),
    so attention reaches the fallback as matmul/softmax/where."""
    model, args = transformer_models.llama(batch=2, seq=8)
    model.model.model.layers = model.model.model.layers[:1]
    ep = torch.export.export(model, args).run_decompositions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onx = tonnx.to_onnx(ep, dispatcher=FALLBACK_ONLY)
    _all_through_fallback(onx)
    with torch.no_grad():
        expected = model(*args)
    (got,) = run_onnxruntime(onx, list(args))
    assert_close(expected, got, atol=1e-4, rtol=1e-4)


def test_without_the_fallback_the_error_names_it():
    """The default dispatcher never falls back: the error says which pack would convert."""
    with pytest.raises(tonnx.ConverterNotFoundError) as info:
        tonnx.to_onnx(LinearCelu().eval(), (_rand(6, 5),), dispatcher=tonnx.Dispatcher(packs=["no:aten"]))
    message = str(info.value)
    assert "aten::celu.default" in message and "aten::linear.default" in message
    assert "'onnxscript' (enable with packs=['onnxscript'] or TONNX_PACKS='onnxscript')" in message
    assert "Dispatcher(fallback='onnxscript')" in message


def test_direct_converters_win_over_the_fallback():
    """With the aten pack enabled the fallback converts nothing of a model aten covers."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback summary warning
        onx = tonnx.to_onnx(Neuron().eval(), (_rand(4, 3),), dispatcher=tonnx.Dispatcher(fallback="onnxscript"))
    props = {p.key: p.value for p in onx.metadata_props}
    assert "pkg.tonnx.fallback_ops" not in props


def test_a_failing_torchlib_function_is_named():
    class M(torch.nn.Module):
        def forward(self, w, x):
            return torch.ops.aten.logit.default(w, 0.75) + x.sum()

    # torchlib's logit needs a float input: an integer one fails inside torchlib
    with pytest.raises(tonnx.TonnxError) as info:
        tonnx.to_onnx(M(), (torch.ones(3, dtype=torch.int64), torch.ones(3)), dispatcher=FALLBACK_ONLY)
    message = str(info.value)
    assert "aten::logit.default" in message and "aten_logit" in message, message


def test_enabled_from_the_environment(monkeypatch):
    """TONNX_PACKS=onnxscript enables the fallback like Dispatcher(fallback='onnxscript')."""
    from tonnx.dispatch._manager import reset_default_manager

    monkeypatch.setenv("TONNX_PACKS", "no:aten,onnxscript")
    reset_default_manager()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            onx = tonnx.to_onnx(LinearCelu().eval(), (_rand(6, 5),))
        _all_through_fallback(onx)
    finally:
        monkeypatch.delenv("TONNX_PACKS")
        reset_default_manager()
