"""Complete and Vec2Text (SoK App. B) and their knowledge views (reconbench.text.knowledge).

On the lee-news track's own target models (its GPT-2 generator trained on the 500 target texts, its
fine-tuned MiniLM embedder), each loaded once per session, with the first texts of its splits so the
attacks run in seconds. The test split is prompted through the same counted query function as the
target split (a view built with text_knowledge_from: the track's own view only ever gives the target).
"""

from __future__ import annotations

import random

import pytest
import torch

from reconbench.image.attacks.base import Progress
from reconbench.core.attack_errors import AttackError
from reconbench.core.queries import KnowledgeError, QueryBudgetExceeded
from reconbench.core.scenario import Scenario
from reconbench.text.attacks import TEXT_ATTACKS, TextReconstruction, enforce_one_per_id, load_text_attack
from reconbench.text.items import TextItem, TextSet
from reconbench.text.knowledge import prompt_of, text_knowledge_from

BLACK_NONE, WHITE_NONE, BLACK_SAME = (Scenario.parse(s) for s in ("static/black-box/none", "static/white-box/none", "static/black-box/same"))


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


@pytest.fixture(scope="session")
def track():
    from reconbench.text.tracks import get_text_track

    return get_text_track("lee-news")


@pytest.fixture(scope="session")
def sets(track):
    from reconbench.text.files import load_text_splits

    full = load_text_splits(track, ["target", "aux", "test"])
    sizes = {"target": 60, "test": 60, "aux": 300, "v2t": 30}  # v2t: the first 30 targets, for Vec2Text
    return {k: TextSet(k, full["target" if k == "v2t" else k].items[:n]) for k, n in sizes.items()}


@pytest.fixture(scope="session")
def generator(track):
    from reconbench.text.files import load_generator

    return load_generator(track)


@pytest.fixture(scope="session")
def embedder(track):
    from reconbench.text.files import load_embedder

    return load_embedder(track)


def gen_view(sets, generator, part="target", scenario=BLACK_NONE, budget=1_000_000):
    return text_knowledge_from(track_id="standin", scenario=scenario, role="generator", target=sets[part],
                               generator=generator, query_budget=budget)


def emb_view(sets, embedder, scenario=BLACK_SAME, budget=1_000_000, part="target"):
    return text_knowledge_from(track_id="standin", scenario=scenario, role="embedder", target=sets[part],
                               embedder=embedder, aux=sets["aux"], query_budget=budget)


def scores(recs: list[str], refs: list[str]) -> dict[str, float]:
    from reconbench.text.metrics import score_text

    return {k: v.value for k, v in score_text(recs, refs).items()}


@pytest.fixture(scope="session")
def complete_runs(sets, generator):
    out = {}
    for part in ("target", "test"):
        view = gen_view(sets, generator, part)
        rec = load_text_attack("complete")(budget="quick").run(view, seed=0, progress=Progress())
        out[part] = (view, enforce_one_per_id(rec, view.target_ids))
    return out


def test_complete_recovers_more_of_the_target_split_than_of_the_test_split(sets, complete_runs):
    got = {part: scores([i.text for i in rec.items], sets[part].texts) for part, (_, rec) in complete_runs.items()}
    print("complete", got)
    # Measured (quick preset, first 60 texts of each split): target bleu 0.828, rouge_l 0.927, similarity
    # 0.940, exact 0.567; test bleu 0.059, rouge_l 0.219, similarity 0.247, exact 0. Asserted: about
    # half of each gap (memorisation is what Complete measures; a model that generalised would not pass).
    assert got["target"]["bleu"] > got["test"]["bleu"] + 0.35, got
    assert got["target"]["rouge_l"] > got["test"]["rouge_l"] + 0.35, got
    assert got["target"]["exact_match"] >= 0.3 and got["test"]["exact_match"] == 0.0, got
    view, rec = complete_runs["target"]
    assert view.queries == len(sets["target"])  # one counted query per prompt
    assert all(item.text.startswith(view.prompts[item.id]) for item in rec.items)  # prompt + completion


@pytest.fixture(scope="session")
def base_minilm():
    from reconbench.text.minilm import load_minilm

    return load_minilm()


@pytest.fixture(scope="session")
def vec2text_run(sets, base_minilm):
    # The target embedder here is the base all-MiniLM-L6-v2 (the track's embedder before its BitFit
    # delta): the margins below were measured with it; the run with the track's fine-tuned embedder was
    # not finished in time to pin its margins (see the session report).
    view = emb_view(sets, base_minilm, part="v2t")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small T5 steps: one thread wastes no CPU on a shared machine
    try:
        rec = load_text_attack("vec2text")(budget="quick").run(view, seed=0, progress=Progress())
    finally:
        torch.set_num_threads(threads)
    return view, enforce_one_per_id(rec, view.target_ids)


def test_vec2text_beats_a_random_aux_sentence(sets, vec2text_run):
    view, rec = vec2text_run
    refs = sets["v2t"].texts
    rng = random.Random(0)
    baseline = scores([rng.choice(sets["aux"].texts) for _ in refs], refs)
    got = scores([i.text for i in rec.items], refs)
    print("vec2text", got, "random aux", baseline)
    # Measured (seed 0, quick preset, 300 aux texts, 30 targets), with torch's AVX2 kernels: similarity
    # 0.112 vs 0.050, rouge_l 0.090 vs 0.073; with its AVX-512 kernels (another machine): 0.115 vs 0.050,
    # 0.080 vs 0.073. Training from scratch amplifies the kernels' rounding, so the ROUGE-L margin is
    # asserted at half the smaller one. BLEU is not asserted: both are near zero (0.0026 vs 0.0032); a
    # tiny T5 trained from scratch on 300 sentences recovers topic words (similarity), not the 4-gram
    # runs BLEU rewards.
    assert got["similarity"] > baseline["similarity"] + 0.03, (got, baseline)
    assert got["rouge_l"] > baseline["rouge_l"] + 0.0035, (got, baseline)
    # Counted: aux embeddings, aux hypotheses, first target hypotheses, then beam candidates per step.
    assert view.queries == rec.provenance["queries"] >= len(sets["aux"]) + len(refs)


def _strings(obj, seen=None) -> list[str]:
    """Every string reachable from the view's own state (not inside model modules or tokenizers)."""
    seen = seen if seen is not None else set()
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in _strings(k, seen) + _strings(v, seen)]
    if isinstance(obj, (list, tuple, set)):
        return [s for v in obj for s in _strings(v, seen)]
    if hasattr(obj, "__dict__") and not isinstance(obj, (torch.nn.Module, torch.Tensor)) and "Tokenizer" not in type(obj).__name__:
        return _strings(vars(obj), seen)
    return []


@pytest.mark.parametrize("role", ["generator", "embedder"])
def test_the_view_never_holds_target_texts(sets, generator, embedder, role):
    view = gen_view(sets, generator, scenario=WHITE_NONE) if role == "generator" else emb_view(sets, embedder)
    held = _strings(view)
    assert held, "the walk found nothing: it would pass vacuously"
    for text in sets["target"].texts:
        assert not any(text in s for s in held), text
    if role == "generator":
        assert all(len(p.split()) == 3 for p in view.prompts.values())  # lee-news texts have >= 6 words
        with pytest.raises(KnowledgeError):
            view.target_embeddings
    else:
        assert view.target_embeddings.shape == (len(sets["target"]), embedder.dim)
        with pytest.raises(KnowledgeError):
            view.prompts


def test_prompt_is_never_the_whole_text():
    assert prompt_of("The fires  burned on", 3) == "The fires burned"
    assert prompt_of("Three short words", 3) == "Three short"
    assert prompt_of("One", 3) == ""


def test_black_box_has_no_model_and_white_box_has_a_copy(sets, generator, embedder):
    black = gen_view(sets, generator)
    with pytest.raises(KnowledgeError):
        black.model
    for name in ("model", "parameters", "_lm_model"):
        with pytest.raises(KnowledgeError):
            getattr(black.query, name)
    with pytest.raises(KnowledgeError):
        black.aux  # no data in static/black-box/none
    white = gen_view(sets, generator, scenario=WHITE_NONE)
    assert isinstance(white.model, torch.nn.Module) and white.model is not generator.model
    assert not any(p.requires_grad for p in white.model.parameters())
    with pytest.raises(KnowledgeError):
        emb_view(sets, embedder).model
    assert emb_view(sets, embedder).aux.texts == sets["aux"].texts


def test_queries_are_counted_and_the_budget_refuses_more(sets, generator, embedder):
    view = gen_view(sets, generator, budget=5)
    out = view.query(["The fire", "Police say"], 4)
    assert len(out) == 2 and view.queries == 2
    with pytest.raises(QueryBudgetExceeded):
        view.query(["a", "b", "c", "d"], 4)
    assert view.queries == 2  # a refused query costs nothing and returns nothing
    with pytest.raises(ValueError):
        view.query(["a"], 10_000)  # beyond the generator's context
    context = view.query.context
    assert context == generator.model.config.n_positions == 128
    with pytest.raises(ValueError, match=f"context of {context} tokens"):
        view.query(["The fire"], context)  # prompt + continuation past n_positions: refused, not cut
    assert view.queries == 2
    emb = emb_view(sets, embedder, budget=3)
    assert emb.query(["one text", "another"]).shape == (2, embedder.dim) and emb.queries == 2
    with pytest.raises(QueryBudgetExceeded):
        emb.query(["x", "y"])
    with pytest.raises(ValueError):
        emb.query("a bare string is not a list of texts")


def test_complete_paper_preset_is_refused_clearly_on_a_short_context(sets, generator):
    """Carlini et al.'s 256 tokens do not fit lee-news' 128-position GPT-2: one clear error, no query spent."""
    view = gen_view(sets, generator)
    with pytest.raises(AttackError, match=r"max_new_tokens=256 \(budget 'paper'\).*context of 128 tokens"):
        load_text_attack("complete")(budget="paper").run(view, seed=0, progress=Progress())
    assert view.queries == 0


def test_exactly_one_reconstruction_per_target_id():
    ids = ("a", "b")
    ok = enforce_one_per_id(TextReconstruction((TextItem("b", "B"), TextItem("a", "A"))), ids)
    assert [(i.id, i.text) for i in ok.items] == [("a", "A"), ("b", "B")]  # target order
    for bad in (
        TextReconstruction((TextItem("a", "A"),)),  # missing b
        TextReconstruction((TextItem("a", "A"), TextItem("a", "A2"), TextItem("b", "B"))),  # duplicate
        TextReconstruction((TextItem("a", "A"), TextItem("b", "B"), TextItem("z", "Z"))),  # unknown id
        TextReconstruction((TextItem("a", "A"), TextItem("b", 3))),  # not text
        [TextItem("a", "A"), TextItem("b", "B")],  # not a TextReconstruction
    ):
        with pytest.raises(AttackError):
            enforce_one_per_id(bad, ids)


def test_registry_catalogue_and_options():
    from reconbench.core.catalogue import TEXT_BY_NAME, TEXT_CATALOGUE

    assert set(TEXT_BY_NAME) == set(TEXT_ATTACKS) == {"complete", "vec2text"} and len(TEXT_CATALOGUE) == 2
    for row in TEXT_CATALOGUE:
        cls = load_text_attack(row.name)
        assert row.load() is cls and row.modality == "text" and row.role == cls.role
        assert (row.family, row.scenarios, row.paper, row.version) == (cls.family, cls.scenarios, cls.paper, cls.version)
    with pytest.raises(AttackError):
        load_text_attack("path/to/file.py:Mine")  # registered-only
    from reconbench.cli.commands.attack_info import attack_details  # `recon-submit attacks complete`

    assert attack_details("complete")["presets"]["paper"] == {"max_new_tokens": 256}
    assert TEXT_ATTACKS["vec2text"](budget="paper").config["decoder"] == "t5-base"
    with pytest.raises(AttackError):
        TEXT_ATTACKS["complete"](max_new_tokens=0)


def test_build_text_knowledge_refuses_a_scenario_the_track_does_not_offer():
    from reconbench.text.knowledge import build_text_knowledge
    from reconbench.text.tracks import get_text_track

    with pytest.raises(KnowledgeError, match="does not offer"):
        build_text_knowledge(get_text_track("lee-news"), "static/white-box/same", "embedder")
