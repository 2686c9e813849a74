"""``tonnx export-llm --runtime onnx``: the portable folder (issue 18 s4).

The graph holds standard-domain nodes only, at opset 23: ``Attention``,
``RMSNormalization`` and ``RotaryEmbedding`` where the ortcontrib pack would put its fused
``com.microsoft`` ops; onnxruntime-genai opens the folder and generates transformers'
greedy tokens. Llama (rotary over the whole head) and Qwen3 (its query/key head norms) are
exported through the command.
"""

from __future__ import annotations

import collections

import onnx
import pytest

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402



@pytest.fixture(scope="module", params=["llama", "qwen3"])
def exported(request, tmp_path_factory):
    """(output folder, the model) of one ``tonnx export-llm --runtime onnx`` run."""
    root = tmp_path_factory.mktemp(f"portable-{request.param}")
    source, out = root / "model", root / "model-onnx"
    model = llm_folders.save_folder(request.param, source)
    assert main(["export-llm", str(source), "-o", str(out), "-q", "--runtime", "onnx"]) == 0
    return out, model


def test_standard_domain_only_with_the_fused_standard_ops(exported):
    out, model = exported
    onx = onnx.load(str(out / "model.onnx"), load_external_data=False)
    assert {(o.domain or "ai.onnx"): o.version for o in onx.opset_import} == {"ai.onnx": 23}
    ops = collections.Counter((n.domain, n.op_type) for n in onx.graph.node)
    assert not [op for op in ops if op[0]], ops
    layers = model.config.num_hidden_layers
    head_norms = 2 if model.config.model_type == "qwen3" else 0  # q_norm and k_norm
    assert ops[("", "Attention")] == layers
    assert ops[("", "RotaryEmbedding")] == 2 * layers
    assert ops[("", "RMSNormalization")] == (2 + head_norms) * layers + 1
    assert not {"Pow", "Sqrt", "Neg", "Softmax"} & {op for _, op in ops}


def test_genai_greedy_tokens_equal_transformers(exported):
    og = pytest.importorskip(
        "onnxruntime_genai",
        reason="onnxruntime-genai is not installed (pip install -e '.[test]' installs it)",
    )
    out, model = exported
    got, want = llm_folders.genai_tokens(og, out, 16), llm_folders.transformers_tokens(model, 16)
    assert len(got) >= 8 and got == want


def test_quantized_precisions_are_refused_for_the_portable_graph(tmp_path):
    from tonnx import UnsupportedError
    from tonnx_transformers import export_llm

    with pytest.raises(UnsupportedError, match="MatMulNBits.*--runtime onnxruntime"):
        export_llm(str(tmp_path / "nowhere"), tmp_path / "out", precision="int4", runtime="onnx")
    with pytest.raises(UnsupportedError, match="choose one of onnxruntime, onnx"):
        export_llm(str(tmp_path / "nowhere"), tmp_path / "out", runtime="tensorrt")


def test_a_contrib_node_in_the_portable_graph_is_refused():
    """The border check: a pack that still emits a custom domain is named."""
    from tonnx import UnsupportedError
    from tonnx_transformers.llm.runtime import check_portable

    node = onnx.helper.make_node("MatMulNBits", ["a", "b"], ["c"], domain="com.microsoft")
    node.metadata_props.add(key="pkg.tonnx.converter", value="quant:matmul_nbits")
    graph = onnx.helper.make_graph([node], "g", [], [])
    onx = onnx.helper.make_model(graph)
    check_portable("onnxruntime", onx)
    with pytest.raises(UnsupportedError, match=r"com\.microsoft\.MatMulNBits \(pack quant\)"):
        check_portable("onnx", onx)
