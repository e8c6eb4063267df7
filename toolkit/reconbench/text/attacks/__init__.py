"""The text attack registry: Complete (the generator) and Vec2Text (the embedder).

Registered names only: text attacks run in the evaluator's process (reconbench.text.knowledge says
why); there is no `path/to/file.py:ClassName` form for text yet. Importing this package does not
import transformers (the attacks import it when they run).
"""

from __future__ import annotations

from reconbench.core.attack_errors import AttackError
from reconbench.core.attack_options import check_declaration
from reconbench.text.attacks.base import TextAttack, TextReconstruction, enforce_one_per_id
from reconbench.text.attacks.complete import Complete
from reconbench.text.attacks.vec2text import Vec2Text

TEXT_ATTACKS: dict[str, type[TextAttack]] = {cls.name: cls for cls in (Complete, Vec2Text)}


def load_text_attack(name: str) -> type[TextAttack]:
    if not isinstance(name, str) or name not in TEXT_ATTACKS:
        raise AttackError(f"unknown text attack '{name}' (known: {', '.join(sorted(TEXT_ATTACKS))}; "
                          "text attacks are registered-only)")
    cls = TEXT_ATTACKS[name]
    check_declaration(cls)
    return cls


__all__ = ["TEXT_ATTACKS", "TextAttack", "TextReconstruction", "enforce_one_per_id", "load_text_attack"]
