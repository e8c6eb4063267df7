"""The text threat-model view: what a text attack may see under a scenario (SoK Def. 3.1, App. B).

`build_text_knowledge(track, scenario, role)` returns a `TextKnowledge`. It never holds the target
texts: the generator role gets only the first `track.prompt_words` words of each target (Complete's
prompt; Carlini et al. 2021 prefix prompting as the SoK runs it, App. B) and the embedder role gets
only the target texts' embeddings from the target embedder (the leaked vectors Vec2Text inverts,
Morris et al. 2023 §3). Black-box access is a counted query function, charged per text and refused
beyond the budget (QueryBudgetExceeded); white-box adds the module; auxiliary texts come only when the
scenario's data access allows. The tokenizer is public (a released model ships its tokenizer).

Text attacks are registered-only and run in the evaluator's process: there is no bring-your-own text
attack yet, so the view is not rebuilt in a child process as image attacks' views are
(reconbench.pipeline.isolation). Its guards (no target texts held, KnowledgeError on anything more) are what
keeps the built-in attacks honest; they are not a sandbox against hostile code.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import torch

from reconbench.core.queries import DEFAULT_QUERY_BUDGET, KnowledgeError, QueryBudgetExceeded
from reconbench.core.scenario import Scenario
from reconbench.text.items import TextSet

if TYPE_CHECKING:
    from reconbench.text.tracks import TextTrack

Role = Literal["generator", "embedder"]
# The generator's context (GPT-2's n_positions is 1024); a query asking for more is refused rather
# than silently truncated.
MAX_NEW_TOKENS_CAP = 1024

__all__ = [
    "DEFAULT_QUERY_BUDGET", "EmbeddingQuery", "GenerationQuery", "KnowledgeError", "QueryBudgetExceeded",
    "TextKnowledge", "build_text_knowledge", "prompt_of", "text_knowledge_from",
]


def prompt_of(text: str, words: int) -> str:
    """The first `words` whitespace-separated words; never the whole text (a text of at most `words`
    words gives all but its last word, so the prompt alone cannot reproduce a target)."""
    parts = text.split()
    keep = min(words, max(len(parts) - 1, 0))
    return " ".join(parts[:keep])


def _texts(texts: Any, what: str) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"{what} expects a list of strings")
    return list(texts)


class _Counted:
    """A budget charged per text; more than the budget raises before any work is done."""

    def __init__(self, budget: int):
        self.budget = int(budget)
        self.queries = 0

    def _charge(self, n: int) -> None:
        if self.queries + n > self.budget:
            raise QueryBudgetExceeded(f"query budget of {self.budget} texts exhausted ({self.queries} used, {n} asked)")
        self.queries += n

    def __getattr__(self, name: str):
        # `query.model`, `query.parameters()`...: black-box access gives outputs only.
        raise KnowledgeError(f"black-box access gives the query's outputs only, not '{name}'")


class GenerationQuery(_Counted):
    """Black-box access to the generator: greedy continuations of prompts, each prompt counted.

    Greedy decoding (no sampling, one beam) stopping at the tokenizer's eos token or after
    `max_new_tokens`, as Carlini et al. 2021 §5.1 decode their prefix prompts ("greedy" is the
    configuration the SoK's App. B Complete uses); the continuation is returned without the prompt.
    """

    def __init__(self, model: torch.nn.Module, tokenizer: Any, budget: int, device: torch.device, batch_size: int = 32):
        super().__init__(budget)
        self.__dict__["_lm"] = (model, tokenizer, device, batch_size)

    def __call__(self, prompts: list[str], max_new_tokens: int) -> list[str]:
        prompts = _texts(prompts, "the generator query")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= MAX_NEW_TOKENS_CAP:
            raise ValueError(f"max_new_tokens must be an int in [1, {MAX_NEW_TOKENS_CAP}], got {max_new_tokens!r}")
        model, tokenizer, device, batch_size = self.__dict__["_lm"]
        self._check_context(tokenizer, prompts, max_new_tokens)
        self._charge(len(prompts))
        return _greedy(model, tokenizer, device, prompts, max_new_tokens, batch_size)

    @property
    def context(self) -> int | None:
        """The generator's context in tokens (GPT-2's n_positions): a public fact of its architecture."""
        config = getattr(self.__dict__["_lm"][0], "config", None)
        return getattr(config, "n_positions", None)

    def _check_context(self, tokenizer, prompts: list[str], max_new_tokens: int) -> None:
        """Prompt + continuation must fit the context: past it GPT-2 has no position embedding, and
        generate would fail deep inside torch (or be cut silently); refused before any query is counted."""
        if self.context is None or not prompts:
            return
        longest = max(len(tokenizer(p if p else tokenizer.bos_token or tokenizer.eos_token)["input_ids"]) for p in prompts)
        if longest + max_new_tokens > self.context:
            raise ValueError(f"max_new_tokens={max_new_tokens} does not fit the generator's context of {self.context} "
                             f"tokens after a prompt of {longest} tokens: ask for at most {self.context - longest}")


def _greedy(model, tokenizer, device, prompts: list[str], max_new_tokens: int, batch_size: int) -> list[str]:
    tok = copy.copy(tokenizer)
    tok.padding_side = "left"  # decoder-only batches: pad on the left so every prompt ends at the same column
    out: list[str] = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        # An empty prompt starts from the bos/eos token, as GPT-2's unconditional samples do.
        enc = tok([p if p else tok.bos_token or tok.eos_token for p in chunk], return_tensors="pt", padding=True)
        enc = {k: v.to(device) for k, v in enc.items()}
        with torch.no_grad():
            ids = model.generate(
                **enc, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
            )
        new = ids[:, enc["input_ids"].shape[1]:]
        out.extend(tok.batch_decode(new, skip_special_tokens=True))
    return out


class EmbeddingQuery(_Counted):
    """Black-box access to the embedder: texts in, L2-normalised embeddings out, each text counted."""

    def __init__(self, embedder: Any, budget: int):
        super().__init__(budget)
        self.__dict__["_embedder"] = embedder

    def __call__(self, texts: list[str]) -> torch.Tensor:
        texts = _texts(texts, "the embedder query")
        self._charge(len(texts))
        if not texts:
            return torch.zeros(0, self.__dict__["_embedder"].dim)
        with torch.no_grad():
            return self.__dict__["_embedder"].encode(texts).detach().float().cpu()


@dataclass
class TextKnowledge:
    """What a text attacker knows: prompts or leaked embeddings, a counted query, the public tokenizer."""

    track_id: str
    scenario: Scenario
    role: Role
    target_ids: tuple[str, ...]
    device: torch.device
    query: Any  # GenerationQuery or EmbeddingQuery
    tokenizer: Any  # the target model's public tokenizer
    _prompts: dict[str, str] | None = field(default=None, repr=False)
    _target_embeddings: torch.Tensor | None = field(default=None, repr=False)
    _model: torch.nn.Module | None = field(default=None, repr=False)
    _aux: TextSet | None = field(default=None, repr=False)

    @property
    def target_size(self) -> int:
        return len(self.target_ids)

    @property
    def queries(self) -> int:
        return self.query.queries

    @property
    def prompts(self) -> dict[str, str]:
        if self._prompts is None:
            raise KnowledgeError(f"the {self.role} view gives no prompts (they are the generator's)")
        return dict(self._prompts)

    @property
    def target_embeddings(self) -> torch.Tensor:
        if self._target_embeddings is None:
            raise KnowledgeError(f"the {self.role} view gives no target embeddings (they are the embedder's)")
        return self._target_embeddings.clone()

    @property
    def model(self) -> torch.nn.Module:
        if self._model is None:
            raise KnowledgeError(f"scenario {self.scenario} is black-box: the {self.role}'s parameters are not available")
        return self._model

    @property
    def aux(self) -> TextSet:
        if self._aux is None:
            raise KnowledgeError(f"scenario {self.scenario} gives no auxiliary texts")
        return self._aux


def text_knowledge_from(
    *,
    track_id: str,
    scenario: Scenario,
    role: Role,
    target: TextSet,
    generator: Any = None,
    embedder: Any = None,
    aux: TextSet | None = None,
    prompt_words: int = 3,
    device: str | torch.device = "cpu",
    query_budget: int = DEFAULT_QUERY_BUDGET,
) -> TextKnowledge:
    """The view built from loaded parts (the evaluator's side; also what tests build stand-ins with).

    generator: an object with `.model` (a causal LM) and `.tokenizer`; embedder: a
    reconbench.text.embedding.Embedder. The target texts are read here and not kept.
    """
    device = torch.device(device)
    if role == "generator":
        if generator is None:
            raise KnowledgeError(f"track '{track_id}' gives no generator")
        model = generator.model.eval()
        query: Any = GenerationQuery(model, generator.tokenizer, query_budget, device)
        prompts: Mapping[str, str] | None = {i.id: prompt_of(i.text, prompt_words) for i in target.items}
        leaked, tokenizer = None, generator.tokenizer
        white_box = copy.deepcopy(model) if scenario.access == "white-box" else None
    elif role == "embedder":
        if embedder is None:
            raise KnowledgeError(f"track '{track_id}' gives no embedder")
        query = EmbeddingQuery(embedder, query_budget)
        with torch.no_grad():  # the leak itself is not a query: it is what the attacker starts from
            leaked = embedder.encode(target.texts).detach().float().cpu()
        prompts, tokenizer = None, embedder.tokenizer
        white_box = copy.deepcopy(embedder.model) if scenario.access == "white-box" else None
    else:
        raise KnowledgeError(f"unknown text role '{role}' (generator or embedder)")
    if white_box is not None:
        for p in white_box.parameters():
            p.requires_grad_(False)
    return TextKnowledge(
        track_id=track_id, scenario=scenario, role=role, target_ids=tuple(target.ids), device=device,
        query=query, tokenizer=tokenizer, _prompts=dict(prompts) if prompts is not None else None,
        _target_embeddings=leaked, _model=white_box, _aux=aux if scenario.data != "none" else None,
    )


def build_text_knowledge(
    track: TextTrack,
    scenario: Scenario | str,
    role: Role,
    *,
    device: str | torch.device = "cpu",
    query_budget: int = DEFAULT_QUERY_BUDGET,
    seed: int = 0,  # unused: the view is deterministic; kept for build_knowledge's signature
) -> TextKnowledge:
    from reconbench.text import files  # the evaluator's side only

    scenario = Scenario.parse(scenario) if isinstance(scenario, str) else scenario
    if not track.offers(scenario):
        raise KnowledgeError(f"track '{track.id}' does not offer scenario {scenario} (offers: {', '.join(track.scenarios)})")
    track.require_runnable()
    parts = ["target"] + (["aux"] if scenario.data != "none" else [])
    splits = files.load_text_splits(track, parts)
    generator = files.load_generator(track, device=device) if role == "generator" else None
    embedder = files.load_embedder(track, device=device) if role == "embedder" else None
    return text_knowledge_from(
        track_id=track.id, scenario=scenario, role=role, target=splits["target"], generator=generator,
        embedder=embedder, aux=splits.get("aux"), prompt_words=track.prompt_words, device=device,
        query_budget=query_budget,
    )
