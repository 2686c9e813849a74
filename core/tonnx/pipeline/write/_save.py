"""Step 5, write: a finished GraphBuilder saved as a model file (with a data file above
2 GB, or when asked), the weights streamed from the tensors or from safetensors files."""

from __future__ import annotations

from tonnx._errors import OutputFileError

#: Models whose initializers exceed this are written with external data when saved.
EXTERNAL_DATA_THRESHOLD = 2**31 - 2**26

#: protobuf cannot parse a message this large: a model file without external data is smaller.
PROTOBUF_LIMIT = 2**31


def save(g, filename: str, external_data: bool | None, weights=None):
    from tonnx.builder._proto import nbytes
    from tonnx.pipeline.write import _file_writer  # the writer imports onnx: loaded when saving

    total = sum(nbytes(v) for v in g.constants.values())
    if external_data is None:
        external_data = total > EXTERNAL_DATA_THRESHOLD
    if not external_data and total >= PROTOBUF_LIMIT:
        raise OutputFileError(
            f"The initializers hold {total / 2**30:.2f} GiB, over protobuf's 2 GiB limit for a "
            f"model in one file: pass external_data=True (or leave it None) to write "
            f"{filename!r} with a data file."
        )
    payload = ranges = None
    if weights is not None:
        from tonnx.pipeline.write._weights import SafetensorsWeights

        source = weights if isinstance(weights, SafetensorsWeights) else SafetensorsWeights(weights)
        source = source.with_derivations(g.derivations)
        payload, ranges = source.payload, source.file_range
    return _file_writer.save(g, filename, external_data=external_data, payload=payload, ranges=ranges)
