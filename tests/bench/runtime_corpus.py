"""The public models bench_runtime.py exports with tonnx and torch.onnx: name -> builder.

Every builder returns ``(model in eval mode, example args)`` with random weights made from a
config (nothing is downloaded) and a static batch of 1. Diffusers and transformers models are
wrapped so the graph returns plain tensors, as a deployment export would.
"""

from __future__ import annotations

import os

import torch


def _image(*shape) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _tokens(vocab: int, length: int) -> torch.Tensor:
    return torch.randint(0, vocab, (1, length), generator=torch.Generator().manual_seed(0))


class Field(torch.nn.Module):
    """Returns one field (``sample``, ``logits``...) of a model's output object."""

    def __init__(self, model, field: str, method: str = "forward"):
        super().__init__()
        self.model, self.field, self.method = model, field, method

    def forward(self, *args):
        out = getattr(self.model, self.method)(*args)
        return getattr(out, self.field) if self.field else out


class Keywords(torch.nn.Module):
    """Calls a model with keyword tensors and returns its first output."""

    def __init__(self, model, names: tuple[str, ...]):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args)), return_dict=False)[0]


# -- torchvision and timm -----------------------------------------------------------------------


def _torchvision(name: str):
    def build():
        import torchvision

        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None).eval()
        # torchvision zeroes vit_b_16's head and draws mobilenet's classifier at std 0.01:
        # the logits were 0 (1e-10 for mobilenet), and comparing them checked nothing
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.Linear):
                    m.weight.normal_(0, m.in_features**-0.5)
        return model, (_image(1, 3, 224, 224),)

    return build


def _timm(name: str, size: int = 224):
    def build():
        import timm

        torch.manual_seed(0)  # the same weights in every process (--reuse-torch-onnx)
        return timm.create_model(name, pretrained=False).eval(), (_image(1, 3, size, size),)

    return build


# -- ultralytics --------------------------------------------------------------------------------


def _yolo(yaml: str, size: int = 640):
    def build():
        os.environ.setdefault("YOLO_OFFLINE", "1")
        from ultralytics.nn.modules.head import Detect
        from ultralytics.nn.tasks import (
            DetectionModel,
            PoseModel,
            SegmentationModel,
            yaml_model_load,
        )

        cfg = yaml_model_load(yaml)  # reads the yaml shipped in the package: no download
        torch.manual_seed(0)
        kind = {"seg": SegmentationModel, "pose": PoseModel}.get(yaml.split("-")[-1].split(".")[0], DetectionModel)
        model = kind(cfg, verbose=False).eval()
        for m in model.modules():
            if isinstance(m, Detect):  # what ultralytics' own ONNX export sets
                m.export, m.format = True, "onnx"
        return model, (_image(1, 3, size, size),)

    return build


# -- diffusers ----------------------------------------------------------------------------------


def _unet():
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    model = UNet2DConditionModel(
        sample_size=32, in_channels=4, out_channels=4, layers_per_block=2,
        block_out_channels=(64, 128), cross_attention_dim=64, attention_head_dim=8,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), norm_num_groups=32,
    ).eval()
    args = (_image(1, 4, 32, 32), torch.tensor([10.0]), _image(1, 16, 64))
    return Field(model, "sample"), args


def _controlnet():
    from diffusers import ControlNetModel

    torch.manual_seed(0)
    model = ControlNetModel(
        in_channels=4, layers_per_block=2, block_out_channels=(64, 128), cross_attention_dim=64,
        attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        norm_num_groups=32, conditioning_embedding_out_channels=(16, 32),
    ).eval()
    # ControlNet zero-initializes its output convolutions: its outputs were 0 and comparing
    # them checked nothing
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(("controlnet_mid_block", "controlnet_down_blocks")):
                p.normal_(0, 0.05)
    args = (_image(1, 4, 32, 32), torch.tensor([10.0]), _image(1, 16, 64), _image(1, 3, 64, 64))
    return Field(model, "mid_block_res_sample"), args


def _vae_decode():
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    model = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(64, 128),
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        layers_per_block=1, norm_num_groups=32,
    ).eval()
    return Field(model, "sample", "decode"), (_image(1, 4, 16, 16),)


def _sd3():
    from diffusers import SD3Transformer2DModel

    torch.manual_seed(0)
    model = SD3Transformer2DModel(
        sample_size=32, patch_size=2, in_channels=4, num_layers=4, attention_head_dim=32,
        num_attention_heads=4, joint_attention_dim=64, caption_projection_dim=128,
        pooled_projection_dim=64, out_channels=4, pos_embed_max_size=32,
    ).eval()
    names = ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep")
    args = (_image(1, 4, 32, 32), _image(1, 16, 64), _image(1, 64), torch.tensor([10.0]))
    return Keywords(model, names), args


def _flux():
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=2, num_single_layers=2, attention_head_dim=32,
        num_attention_heads=4, joint_attention_dim=64, pooled_projection_dim=64,
        axes_dims_rope=(8, 12, 12),
    ).eval()
    names = ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep", "img_ids", "txt_ids")
    image_ids = torch.stack(torch.meshgrid(torch.zeros(1), torch.arange(16.0), torch.arange(16.0), indexing="ij"), -1)
    args = (
        _image(1, 256, 16), _image(1, 16, 64), _image(1, 64), torch.tensor([0.5]),
        image_ids.reshape(256, 3), torch.zeros(16, 3),
    )
    return Keywords(model, names), args


# -- transformers -------------------------------------------------------------------------------


def _hf(config_name: str, model_name: str, field: str, inputs, **config):
    def build():
        import transformers

        torch.manual_seed(0)
        cfg = getattr(transformers, config_name)(**config)
        model = getattr(transformers, model_name)(cfg).eval()
        return Field(model, field), inputs()

    return build


_SMALL = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)


def _whisper_encoder():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(
        d_model=256, encoder_layers=4, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024, max_source_positions=750,
    )
    encoder = transformers.WhisperModel(cfg).eval().encoder
    return Field(encoder, "last_hidden_state"), (_image(1, 80, 1500),)


def _t5():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.T5Config(d_model=256, d_ff=1024, num_layers=4, num_heads=4, d_kv=64, vocab_size=1000)
    model = transformers.T5Model(cfg).eval()
    return Keywords(model, ("input_ids", "decoder_input_ids")), (_tokens(1000, 64), _tokens(1000, 16))


CORPUS = {
    "resnet50": _torchvision("resnet50"),
    "mobilenet_v3_large": _torchvision("mobilenet_v3_large"),
    "convnext_tiny": _torchvision("convnext_tiny"),
    "vit_b_16": _torchvision("vit_b_16"),
    "swin_t": _torchvision("swin_t"),
    "convnext_atto": _timm("convnext_atto"),
    "dla60x": _timm("dla60x"),
    "efficientnet_lite0": _timm("efficientnet_lite0"),
    "flexivit_small": _timm("flexivit_small", 240),
    "yolo11n": _yolo("yolo11n.yaml"),
    "yolo11n-seg": _yolo("yolo11n-seg.yaml"),
    "yolo11n-pose": _yolo("yolo11n-pose.yaml"),
    "unet2d": _unet,
    "controlnet": _controlnet,
    "vae_decode": _vae_decode,
    "sd3_tiny": _sd3,
    "flux_tiny": _flux,
    "bert": _hf("BertConfig", "BertModel", "last_hidden_state", lambda: (_tokens(1000, 128),), vocab_size=1000, **_SMALL),
    "vit": _hf(
        "ViTConfig", "ViTModel", "last_hidden_state", lambda: (_image(1, 3, 224, 224),), **_SMALL
    ),
    "whisper_encoder": _whisper_encoder,
    "t5": _t5,
    "llama_logits": _hf(
        "LlamaConfig", "LlamaForCausalLM", "logits", lambda: (_tokens(1000, 128),),
        vocab_size=1000, num_key_value_heads=2, **_SMALL,
    ),
}

# a few seconds each to export and measure: what --quick runs
QUICK = ("convnext_atto", "yolo11n", "vae_decode", "sd3_tiny", "flux_tiny", "unet2d", "bert", "llama_logits")
