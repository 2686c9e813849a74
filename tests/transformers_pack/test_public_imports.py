"""The transformers pack is a pack like any other: it imports only tonnx's public surface.

tonnx's public modules are ``tonnx``, ``tonnx.converters`` (converter helpers) and
``tonnx.toolkit`` (weights sources, progress, targets, SIGTERM); every other module of tonnx
and of the other packs is private and may change under the pack (issue 34, item 5)."""

from __future__ import annotations

import ast
import pathlib

import tonnx_transformers

PUBLIC = {"tonnx", "tonnx.converters", "tonnx.toolkit"}
#: the aten pack's RMSNorm matcher, a public module of the pack that ships with tonnx
PUBLIC_OF_OTHER_PACKS = {"tonnx_aten.rewrites.rms_norm"}


def _imports(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, module) of every ``import tonnx...`` / ``from tonnx... import name`` in a file;
    ``from tonnx.x import _y`` counts as the module ``tonnx.x._y``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if a.name.startswith("_")]
    return [(line, m) for line, m in found if m.split(".")[0] in {"tonnx", "tonnx_aten", "tonnx_prims"}]


def test_the_pack_imports_only_public_modules_of_tonnx():
    root = pathlib.Path(tonnx_transformers.__file__).parent
    private = [f"{path.relative_to(root)}:{line}: {module}"
               for path in sorted(root.rglob("*.py"))
               for line, module in _imports(path)
               if module not in PUBLIC | PUBLIC_OF_OTHER_PACKS]
    assert not private, "private imports:\n" + "\n".join(private)


def test_the_check_sees_a_private_import(tmp_path):
    """The scan above is not blind: it reports both spellings of a private import."""
    file = tmp_path / "m.py"
    file.write_text("from tonnx.tools.cli import _codes\nfrom tonnx.builder._derived import Derivation\n")
    assert [m for _, m in _imports(file)] == ["tonnx.tools.cli", "tonnx.tools.cli._codes", "tonnx.builder._derived"]


def _local_imports(path: pathlib.Path, root: pathlib.Path) -> set[str]:
    """The pack's own modules ``path`` (not an ``__init__``) imports: its relative imports,
    at any depth of the file."""
    parts = list(path.relative_to(root).with_suffix("").parts)[:-1]  # the module's package
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = parts[: len(parts) - node.level + 1]
            stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
            modules = {f"{stem}.{a.name}" for a in node.names}
            found |= {m for m in modules if (root / (m.replace(".", "/") + ".py")).is_file()} or {stem}
    return found


def test_the_pack_has_no_import_cycles():
    """No module imports one that imports it back, even from inside a function (such a circle
    hides which module owns a name; issue 34 item 5 named llm/quantize <-> quantize_experts)."""
    root = pathlib.Path(tonnx_transformers.__file__).parent
    graph = {".".join(p.relative_to(root).with_suffix("").parts): _local_imports(p, root)
             for p in root.rglob("*.py") if p.name != "__init__.py"}
    cycles = sorted(f"{a} <-> {b}" for a, deps in graph.items() for b in deps
                    if a < b and a in graph.get(b, ()))
    assert not cycles, cycles
