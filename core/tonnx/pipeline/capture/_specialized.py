"""A dimension declared dynamic that torch.export made static, said as the user wrote it.

torch.export fails such an export with its own names for the axis (``L['x'].size()[1]``,
``inputs['x'].shape[0]``, a ``Dim``'s name) and advice about ``mark_dynamic``. Two causes,
two fixes: an example of size 0 or 1 (torch specializes those sizes: use 2 or more), or
the model's code needs one size (a reshape, a weight's shape: declare the axis static).
The error names the input and the axis as given in ``dynamic_shapes``.
"""

from __future__ import annotations

import re

from tonnx._errors import DynamicShapesError

#: (torch's name for the axis, the size it was fixed to) in torch.export's messages
_SPECIALIZED = (
    re.compile(r"You marked (?P<axis>\S+) as dynamic but your code specialized it to be a constant \((?P<size>-?\d+)\)"),
    re.compile(r"specialized due to hint of (?P<size>\d+) for dimension (?P<axis>\S+?)\.(?:\s|$)"),
    re.compile(r"inferred a static shape of (?P<size>\d+) for dimension (?P<axis>\S+?)\.(?:\s|$)"),
)


def _torch_names(path: str, axis: int, name: str | None) -> set[str]:
    """What torch.export calls an axis of the input at ``path`` (``['x'][0]``)."""
    names = {f"L{path}.size()[{axis}]", f"inputs{path}.shape[{axis}]"}
    return names | ({name} if name else set())


def _fixed(error: BaseException, named: list) -> list[tuple[tuple, int]]:
    """(declared axis, size torch fixed it to) for each axis torch's message names."""
    text = str(error)
    sizes: dict[int, int] = {}  # index in named -> size
    for pattern in _SPECIALIZED:
        for match in pattern.finditer(text):
            for i, (_, axis, name, path, _) in enumerate(named):
                if match["axis"] in _torch_names(path, axis, name):
                    sizes.setdefault(i, int(match["size"]))
    return [(named[i], size) for i, size in sorted(sizes.items())]


def _describe(entry, size: int) -> str:
    tensor, axis, name, path, _ = entry
    label = f"dynamic_shapes{path} axis {axis}" + (f" ({name!r})" if name else "")
    if int(tensor.shape[axis]) == size and size in (0, 1):
        return (f"{label} is declared dynamic but its example size is {size}, which "
                f"torch.export always makes static: use an example size of 2 or more")
    return (f"{label} is declared dynamic but the model fixes this dimension to {size} (its "
            f"code needs that size: a reshape, a weight's shape, a check): declare it static "
            f"(leave it out of dynamic_shapes) or change the code that fixes it")


def specialized_dimension_error(error: BaseException, named: list) -> DynamicShapesError | None:
    """The error to raise for ``error`` (torch.export's) when it says a dimension of
    ``named`` (``_dynamic_shapes.convert``'s declared axes) was made static, else None."""
    if "specialized" not in str(error):
        return None
    found = _fixed(error, named)
    if not found:  # torch named the axis otherwise: an example of size 0/1 is still the cause
        found = [(e, int(e[0].shape[e[1]])) for e in named if int(e[0].shape[e[1]]) in (0, 1)]
    if not found:
        return None
    lines = "; ".join(_describe(entry, size) for entry, size in found)
    return DynamicShapesError(f"{lines}.\ntorch.export's error: {type(error).__name__}: {error}")
