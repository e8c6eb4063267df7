"""The house has no circles (issue 15 item 14): read every module's imports (with ast, nothing is
executed) and fail on an import circle, or on an attack that imports what only the evaluator may
use (the registry, track files, data, the Hub client, the metrics).

Every import counts, also one inside a function (a lazy import is still a dependency); imports under
`if TYPE_CHECKING:` do not (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "toolkit" / "reconbench"
ROOT = "reconbench"

# What an attack may not reach: these lead to the target set (load_splits) or the evaluator's side.
FORBIDDEN_FOR_ATTACKS = ("reconbench.core.tracks", "reconbench.image.track_files", "reconbench.image.data",
                         "reconbench.core.hub", "reconbench.image.metrics", "reconbench.zoo", "reconbench.pipeline",
                         "reconbench.submissions")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules `path` imports (`from pkg import sub` is an edge to pkg.sub only)."""
    name = module_name(path)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = {f"{target}.{a.name}" for a in node.names} & modules  # `from pkg import submodule`
            found.update(submodules)
            if len(submodules) < len(node.names):  # names defined in `target` itself
                found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in modules and m != name}


def graph() -> dict[str, set[str]]:
    files = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in files}
    return {module_name(p): imports(p, modules) for p in files}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys

    sys.setrecursionlimit(10_000)
    for v in sorted(g):
        if v not in index:
            strong(v)
    return out




# The layers, bottom first (docs/architecture.md, "Layers"): a module may import its own layer and
# the layers below, never one above. The longest matching prefix places a module; a helper that
# lives in a higher folder but imports nothing above its use (the Ray helpers, the copy rules) is
# placed by name. Every module must be placed: a new one gets its layer here.
LAYERS = (
    ("core", ("reconbench._version", "reconbench.core", "reconbench.sweep.cluster")),
    ("modalities", ("reconbench.image", "reconbench.text", "reconbench.zoo", "reconbench.submissions.nearcopy",
                    "reconbench.submissions.textcopy")),
    # Each modality's run (image/evaluation.py, text/evaluation.py) and the surrogate route, which
    # steals a model through the image run's queries, sit with the shared run machinery.
    ("pipeline", ("reconbench.pipeline", "reconbench.image.evaluation", "reconbench.image.surrogate",
                  "reconbench.text.evaluation")),
    # The modality plug-ins (reconbench.modalities, image/plugin.py, reproduce.py and board.py, the
    # same three in text/) join a modality's pipeline, validation stages and reproduction for the core: they sit
    # with the board.
    ("board", ("reconbench.submissions", "reconbench.reproduction", "reconbench.leaderboard", "reconbench.judge",
               "reconbench.modalities", "reconbench.image.plugin", "reconbench.image.reproduce", "reconbench.image.board",
               "reconbench.text.plugin", "reconbench.text.reproduce", "reconbench.text.board")),
    ("command line", ("reconbench", "reconbench.api", "reconbench.cli", "reconbench.sweep")),
)


def layer_of(module: str) -> int | None:
    placed = [(len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
              if module == prefix or module.startswith(prefix + ".")]
    return max(placed)[1] if placed else None


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in graph() if layer_of(m) is None)
    assert not unplaced, f"modules without a layer (add them to LAYERS): {unplaced}"


def test_imports_run_down_the_layers():
    g = graph()
    upward = sorted(f"{m} ({LAYERS[layer_of(m)][0]}) imports {d} ({LAYERS[layer_of(d)][0]})"
                    for m, deps in g.items() for d in deps
                    if None not in (layer_of(m), layer_of(d)) and layer_of(d) > layer_of(m))
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_the_layer_rule_sees_an_upward_import():
    """The rule itself: a board import from a metric module, or a command-line import from the
    board, is against the order; the reverse is not."""
    assert layer_of("reconbench.image.metrics.ssim") < layer_of("reconbench.leaderboard.build") < layer_of("reconbench.cli")
    assert layer_of("reconbench.submissions.nearcopy") < layer_of("reconbench.submissions.checks.nearcopies")
    assert layer_of("reconbench.text.evaluation") == layer_of("reconbench.image.evaluation") > layer_of("reconbench.text.tracks")


def test_no_import_circles():
    found = cycles(graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_attacks_do_not_import_the_evaluators_side():
    g = graph()
    bad = {m: sorted(d for d in deps if d.startswith(FORBIDDEN_FOR_ATTACKS))
           for m, deps in g.items() if m.startswith("reconbench.image.attacks.")}
    bad = {m: d for m, d in bad.items() if d}
    assert not bad, f"attacks importing the registry, data, Hub or metrics: {bad}"


def test_the_reader_sees_lazy_imports_and_ignores_type_checking(tmp_path):
    """The graph reader itself: a function-level import is an edge; TYPE_CHECKING is not."""
    g = graph()
    assert "reconbench.zoo.loading" in g["reconbench.image.track_files"]  # imported inside load_splits
    assert "reconbench.image.data.arrays" not in g["reconbench.image.track_files"]  # only under TYPE_CHECKING
    assert "reconbench.image.track_files" not in g["reconbench.core.tracks"] and "reconbench.zoo.loading" not in g["reconbench.core.tracks"]


def test_the_board_reads_the_attack_catalogue_never_attack_code():
    """The leaderboard learns attack names and papers from reconbench.core.catalogue (issue 25, item 3)."""
    g = graph()
    bad = {m: sorted(d for d in deps if d == "reconbench.image.attacks" or d.startswith("reconbench.image.attacks."))
           for m, deps in g.items() if m.startswith("reconbench.leaderboard")}
    bad = {m: d for m, d in bad.items() if d}
    assert not bad, f"board modules importing attack code: {bad}"


# What one modality still takes from the other (docs/architecture.md, "Modalities": not yet neutral).
# A ratchet: a new import between image/ and text/ fails here; what both need goes to core/.
CROSS_MODALITY = {
    ("reconbench.text.attacks.base", "reconbench.image.attacks.base"),  # TextAttack subclasses Attack
    ("reconbench.text.evaluation", "reconbench.image.knowledge"),  # check_attack_fits
    ("reconbench.text.results", "reconbench.image.results"),  # parse_any_result's fallback to the image format
}


def test_the_modalities_import_each_other_only_where_listed():
    def modality(m: str) -> str | None:
        return next((x for x in ("image", "text") if m.startswith(f"reconbench.{x}.")), None)

    cross = {(m, d) for m, deps in graph().items() for d in deps
             if modality(m) and modality(d) and modality(m) != modality(d)}
    assert cross <= CROSS_MODALITY, f"new imports between the modalities (move what both need to core/): {sorted(cross - CROSS_MODALITY)}"
    assert CROSS_MODALITY <= cross, f"listed but gone (remove them from CROSS_MODALITY): {sorted(CROSS_MODALITY - cross)}"
