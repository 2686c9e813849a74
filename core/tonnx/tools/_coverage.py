"""Which registered keys a pack's tests cover (``tonnx coverage``, ``assert_pack_covered``).

Coverage is declared where the tests are: a test module lists the keys it exercises in a
module-level ``COVERS`` set of strings, next to tests that call ``check_op(...,
expect_op=key)`` (which fails unless the key really is in the exported program). The
sets are read statically, with ``ast``: counting coverage imports no test and runs nothing.
A converter registered with ``complex=True`` is covered by ``"<key> (complex)"``
(``"aten::mul.Tensor (complex)"``): its test calls the op on complex values.
"""

from __future__ import annotations

import ast
import inspect
import keyword
from pathlib import Path


class CoverageError(Exception):
    """``tonnx coverage`` was asked about a pack or a test path that does not exist (exit 2)."""


def coverage_key(converter) -> str:
    """The ``COVERS`` entry of a converter: its key, with `` (complex)`` for complex ones."""
    return f"{converter.key} (complex)" if converter.complex else converter.key


def covers_of(path: Path) -> set[str]:
    """The ``COVERS`` set of one test module (empty when it has none)."""
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COVERS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def covered_keys(*test_dirs) -> dict[str, str]:
    """``{key: test file}`` over every ``test_*.py`` under ``test_dirs`` (recursively)."""
    found: dict[str, str] = {}
    for test_dir in test_dirs:
        root = Path(test_dir)
        files = [root] if root.is_file() else sorted(root.rglob("test_*.py"))
        for path in files:
            for key in covers_of(path):
                found.setdefault(key, str(path))
    return found


def pack_converters(name: str) -> tuple:
    """The converters pack ``name`` registers, loaded and validated like an export does."""
    from tonnx.dispatch._manager import default_manager

    manager = default_manager()
    if name not in manager.specs:
        known = ", ".join(sorted(manager.specs)) or "none"
        raise LookupError(f"No installed pack named {name!r} (installed: {known}); pip install it.")
    return manager.converters(name)


def pack_coverage(name: str, *test_dirs) -> tuple[set[str], set[str], dict[str, str]]:
    """(registered keys, covered keys, COVERS entries naming keys the pack lacks)."""
    registered = {coverage_key(c) for c in pack_converters(name)}
    covered = covered_keys(*test_dirs)
    stale = {k: f for k, f in covered.items() if k not in registered and k.split("::")[0] in _namespaces(registered)}
    return registered, registered & set(covered), stale


def _namespaces(keys) -> set[str]:
    return {k.split("::")[0] for k in keys}


def assert_pack_covered(name: str, *test_dirs, ignore=None) -> None:
    """The meta-test: every key pack ``name`` registers is in a ``COVERS`` set under
    ``test_dirs``, and no ``COVERS`` entry names a key it does not register.

    ``ignore(converter) -> bool`` leaves converters out (tested elsewhere).
    """
    converters = [c for c in pack_converters(name) if not (ignore and ignore(c))]
    covered = covered_keys(*test_dirs)
    missing = sorted({coverage_key(c) for c in converters} - set(covered))
    if missing:
        raise AssertionError(
            f"Pack {name!r}: converters without a test (add the keys to a COVERS set in a "
            f"test module that checks them with check_op(..., expect_op=key)): {missing}"
        )
    _, _, stale = pack_coverage(name, *test_dirs)
    if stale:
        raise AssertionError(f"Pack {name!r}: COVERS names keys the pack does not register: {stale}")


def assert_follows_schema(converter) -> None:
    """A converter's parameters are ``g, sts, outputs`` then its op's schema arguments, by
    name; extra parameters have defaults. Fails for a key that is not a torch op overload."""
    import torch

    ns, _, rest = converter.key.partition("::")
    name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns), name, None)
    op = getattr(packet, overload or "default", None) if packet is not None else None
    if op is None:
        raise AssertionError(f"{converter.key} is not an op overload of this torch (is its library imported?)")
    params = list(inspect.signature(converter.function).parameters.values())
    where = converter.qualified_name
    if [p.name for p in params[:3]] != ["g", "sts", "outputs"]:
        raise AssertionError(f"{where}: the first parameters must be (g, sts, outputs)")
    names = {p.name: p for p in params[3:]}
    # a schema name that is a python keyword (uniform's ``from``) is spelled with a trailing _
    schema_names = [a.name + "_" if keyword.iskeyword(a.name) else a.name for a in op._schema.arguments]
    absent = [n for n in schema_names if n not in names]
    if absent:
        raise AssertionError(f"{where} lacks schema parameters {absent} of {op._schema}")
    extra = [n for n, p in names.items() if n not in schema_names and p.default is inspect.Parameter.empty]
    if extra:
        raise AssertionError(f"{where} has parameters {extra} without default, not in {op._schema}")


def coverage_report(test_dirs, packs=None) -> tuple[str, int]:
    """The text of ``tonnx coverage`` and its exit code (1 when a key is not covered).

    Graph converters (an ``expand`` attribute: decompositions generated from torch's
    table) are counted apart: their own tests check them by sample, not key by key.
    """
    from tonnx.dispatch._manager import diagnostic_manager, lenient

    manager = diagnostic_manager()
    _check_arguments(manager, test_dirs, packs)
    names = packs or sorted(manager.specs)
    covered = covered_keys(*test_dirs)
    header = f"{'pack':<16}{'registered':>11}{'covered':>9}{'generated':>11}  missing"
    lines, status = [header], 0
    for name in names:
        with lenient(manager):
            converters = manager.usable_converters(name) if name not in manager.failures else None
        if converters is None:
            lines.append(f"{name:<16}{'-':>11}{'-':>9}{'-':>11}  FAILED TO LOAD: {manager.failures[name]}")
            status = 1
            continue
        registered = {coverage_key(c) for c in converters if not hasattr(c.function, "expand")}
        generated = {coverage_key(c) for c in converters} - registered
        missing = sorted(registered - set(covered))
        status = status or int(bool(missing))
        shown = ", ".join(missing[:6]) + (f", ... ({len(missing)} in all)" if len(missing) > 6 else "")
        lines.append(
            f"{name:<16}{len(registered):>11}{len(registered) - len(missing):>9}"
            f"{len(generated):>11}  {shown or '-'}"
        )
    return "\n".join(lines), status


def _check_arguments(manager, test_dirs, packs) -> None:
    """Every test path exists and every pack asked for is installed, or CoverageError."""
    absent = [str(p) for p in test_dirs if not Path(p).exists()]
    if absent:
        raise CoverageError(f"no such test folder or file: {', '.join(absent)}.")
    unknown = sorted(set(packs or ()) - set(manager.specs))
    if unknown:
        known = ", ".join(sorted(manager.specs)) or "none"
        raise CoverageError(
            f"no installed pack named {', '.join(map(repr, unknown))} (installed: {known}); "
            f"`tonnx packs` lists them."
        )
