"""Complete: training-data extraction by prompting (Carlini et al., USENIX Security 2021), as the SoK's
App. B runs it (after Wen et al., CCS 2024): prompt the target language model with the first three
words of each target text and take its greedy completion; the reconstruction is prompt + completion.

The prompts come from the knowledge view (the first `track.prompt_words` words, never more); the
decoding is the view's counted query function (greedy, no sampling, one beam, stopping at the
tokenizer's eos token or after `max_new_tokens`), so black-box and white-box runs decode alike:
white-box access adds the module but the attack, as published, only needs its outputs.
"""

from __future__ import annotations

from pydantic import Field

from reconbench.core.progress import Progress
from reconbench.core.attack_errors import AttackError
from reconbench.core.attack_options import AttackOptions
from reconbench.text.attacks.base import TextAttack, TextReconstruction
from reconbench.text.items import TextItem


class Complete(TextAttack):
    name = "complete"
    paper = ("Carlini et al., Extracting Training Data from Large Language Models, USENIX Security 2021 "
             "(first-three-words prompts as in Wen et al., CCS 2024, and the SoK's App. B)")
    family = "extraction"
    scenarios = ("static/black-box/none",)  # white-box includes black-box (Scenario.allows)
    role = "generator"

    class Options(AttackOptions):
        # Carlini et al. 2021 §4.1 generate 256 tokens per prompt (the paper preset). The SoK does not
        # say; a target here is one sentence (lee-news sentences are under 64 GPT-2 tokens for the
        # great majority), and generation stops at eos before the cap when the model has learnt to end
        # its sentences, so the default cap is 64 tokens.
        max_new_tokens: int = Field(64, ge=1, le=1024, description="greedy tokens after the prompt (stops earlier at eos)")
        batch: int = Field(64, ge=1, description="prompts per query call (no effect on the result)")

    presets = {"quick": {"max_new_tokens": 32}, "paper": {"max_new_tokens": 256}}

    def run(self, knowledge, *, seed: int, progress: Progress) -> TextReconstruction:
        del seed  # greedy decoding is deterministic
        prompts = knowledge.prompts
        ids = list(knowledge.target_ids)
        batch = self.config["batch"]
        context = getattr(knowledge.query, "context", None)
        if context is not None and self.config["max_new_tokens"] >= context:
            # Carlini et al.'s 256 tokens (the paper preset) need GPT-2's 1,024-token context; a small
            # track's generator may have less (lee-news: 128). Refused before any query.
            raise AttackError(f"complete: max_new_tokens={self.config['max_new_tokens']} (budget '{self.budget}') does not "
                              f"fit the generator's context of {context} tokens; choose a smaller budget or "
                              f"max_new_tokens below {context} minus the prompt's length")
        items: list[TextItem] = []
        with progress.task("complete: greedy completions", len(ids)) as advance:
            for start in range(0, len(ids), batch):
                chunk = ids[start : start + batch]
                heads = [prompts[i] for i in chunk]
                tails = knowledge.query(heads, self.config["max_new_tokens"])
                items.extend(TextItem(i, join(h, t)) for i, h, t in zip(chunk, heads, tails))
                advance(len(chunk))
        return TextReconstruction(tuple(items), {"queries": knowledge.queries})


def join(prompt: str, completion: str) -> str:
    """prompt + completion, one line: byte-level BPE continuations carry their leading space; other
    tokenizers' may not, so a space is put between words that would otherwise run together."""
    if prompt and completion and not completion[0].isspace() and completion[0].isalnum():
        completion = " " + completion
    return " ".join((prompt + completion).split())
