"""``processor_config.json``: onnxruntime-extensions' image pipeline, written from the source's
``preprocessor_config.json`` (transformers' image processor settings).

onnxruntime-genai's multimodal processor runs it on each image (``og.Images``): decode,
resize, rescale, normalize, cut into patches. Each step is the transformers processor's:
``Resize`` with ``smart_resize`` rounds the size to a multiple of ``patch_size *
merge_size`` within ``min_pixels`` .. ``max_pixels`` (transformers' ``smart_resize``) with
bicubic interpolation (transformers' ``resample`` 3); ``PatchImage`` lays the patches out as
transformers' ``Qwen2VLImageProcessor`` does (2x2 units of patches, each ``channels x
temporal x patch x patch``).
"""

from __future__ import annotations

from tonnx import UnsupportedError

#: transformers' (PIL's) resample codes -> onnxruntime-extensions' interpolation names
_INTERPOLATION = {0: "NEAREST", 2: "LINEAR", 3: "CUBIC", 1: "LANCZOS"}


def _op(name: str, kind: str, **attrs) -> dict:
    operation = {"name": name, "type": kind}
    if attrs:
        operation["attrs"] = attrs
    return {"operation": operation}


def qwen2_vl_pipeline(pre: dict) -> dict:
    """The pipeline of a Qwen2-VL / Qwen2.5-VL image processor's settings ``pre``."""
    size = pre.get("size") or {}
    min_pixels = int(pre.get("min_pixels") or size.get("shortest_edge") or 56 * 56)
    max_pixels = int(pre.get("max_pixels") or size.get("longest_edge") or 28 * 28 * 1280)
    resample = pre.get("resample", 3)
    if resample not in _INTERPOLATION:
        raise UnsupportedError(f"preprocessor_config.json: resample {resample!r} has no onnxruntime-extensions "
                               f"interpolation ({sorted(_INTERPOLATION)} do).")
    if pre.get("do_resize") is False or pre.get("do_rescale") is False or pre.get("do_normalize") is False:
        raise UnsupportedError("preprocessor_config.json turns off resizing, rescaling or normalizing: "
                               "onnxruntime-genai's Qwen pipeline always does them.")
    patch, merge = int(pre.get("patch_size", 14)), int(pre.get("merge_size", 2))
    transforms = [
        _op("decode_image", "DecodeImage", color_space="RGB"),
        _op("resize", "Resize", smart_resize=1, min_pixels=min_pixels, max_pixels=max_pixels, patch_size=patch,
            merge_size=merge, interpolation=_INTERPOLATION[resample]),
        _op("rescale", "Rescale", rescale_factor=float(pre.get("rescale_factor", 1 / 255))),
        _op("normalize", "Normalize", mean=[float(v) for v in pre["image_mean"]],
            std=[float(v) for v in pre["image_std"]]),
        _op("patch_image", "PatchImage", patch_size=patch, temporal_patch_size=int(pre.get("temporal_patch_size", 2)),
            merge_size=merge),
    ]
    return {"processor": {"name": "qwen2_5_image_processor", "transforms": transforms}}


def pixtral_pipeline(pre: dict, *, merge: int) -> dict:
    """The pipeline of a Pixtral image processor's settings ``pre`` (Mistral3).

    onnxruntime-genai's ``mistral3`` processor needs sizes that are multiples of
    ``patch_size * merge``; transformers' Pixtral processor scales the longest edge down to
    ``longest_edge`` and rounds each side up to a multiple of ``patch_size``. The resize
    here rounds each side to the nearest multiple of ``patch_size * merge`` within a budget
    of ``longest_edge ** 2`` pixels (onnxruntime-extensions' ``smart_resize``): an image
    whose sides are already such multiples, within the budget, is not resized by either
    (and gives transformers' pixel values); another is resized to a size transformers'
    processor would not choose."""
    size = pre.get("size") or {}
    longest = int(size.get("longest_edge") or size.get("height") or 1024)
    patch = pre.get("patch_size", 16)
    patch = int(patch.get("height", 16) if isinstance(patch, dict) else patch)
    resample = pre.get("resample", 3)
    if resample not in _INTERPOLATION:
        raise UnsupportedError(f"preprocessor_config.json: resample {resample!r} has no onnxruntime-extensions "
                               f"interpolation ({sorted(_INTERPOLATION)} do).")
    factor = patch * merge
    transforms = [
        _op("decode_image", "DecodeImage", color_space="RGB"),
        _op("resize", "Resize", smart_resize=1, min_pixels=factor * factor, max_pixels=longest * longest,
            patch_size=patch, merge_size=merge, interpolation=_INTERPOLATION[resample]),
        _op("rescale", "Rescale", rescale_factor=float(pre.get("rescale_factor", 1 / 255))),
        _op("normalize", "Normalize", mean=[float(v) for v in pre["image_mean"]],
            std=[float(v) for v in pre["image_std"]]),
        _op("to_channel_first", "Permute3D", dims=[2, 0, 1]),
        _op("image_sizes", "PixtralImageSizes"),
    ]
    return {"processor": {"name": "pixtral_image_processor", "transforms": transforms}}
