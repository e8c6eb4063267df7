"""`recon-submit attacks NAME`: one attack's options (type, range, default, description) and presets."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from reconbench.core.console import console, fail


def attack_details(spec: str) -> dict:
    """Everything `attacks NAME` prints, as data (also usable from Python). A file (`path/to/file.py:Class`)
    is described by its own process in the sandbox: importing it here would run its module's code (a
    contributor's, for a reviewer looking at an entry) outside the sandbox, with the caller's rights."""
    from reconbench.core.attack_options import details
    from reconbench.modalities import for_attack

    if ":" in spec and spec.rsplit(":", 1)[0].endswith(".py"):
        from reconbench.pipeline.isolation.parent import described

        return described(spec)
    return details(for_attack(spec).load_attack(spec))  # a text attack is registered-only: its name


def _text(value: object) -> str:
    return escape(repr(value) if isinstance(value, str) else str(value))


def print_attack(spec: str) -> None:
    from reconbench.image.attacks import AttackError

    try:
        info = attack_details(spec)
    except AttackError as exc:
        fail(escape(str(exc)))
    console.print(f"[bold]{escape(info['name'])}[/] ({escape(info['family'])}): {escape(info['paper'])}")
    console.print(f"scenarios: {escape(', '.join(info['scenarios']))}")
    if info["variant"]:
        console.print(f"variant: {escape(info['variant'])}")
    table = Table(title="options (--set NAME=VALUE)")
    for col in ("option", "type (range)", "default", "description"):
        table.add_column(col)
    for row in info["options"]:
        table.add_row(escape(row["name"]), escape(row["type"]), _text(row["default"]), escape(row["description"]))
    console.print(table)
    presets = Table(title="budget presets (--budget NAME)")
    presets.add_column("budget")
    presets.add_column("settings")
    for budget, values in info["presets"].items():
        shown = ", ".join(f"{k}={_text(v)}" for k, v in values.items())
        presets.add_row(budget, "the defaults above" if budget == "default" else (shown or "same as default"))
    console.print(presets)
    console.print('"auto": the paper\'s budget on full-size tracks, a smaller one on the 8x8 embedded tracks; '
                  "the result records the number that ran.")
