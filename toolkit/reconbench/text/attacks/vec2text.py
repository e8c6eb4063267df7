"""Vec2Text (Morris et al., Text Embeddings Reveal (Almost) As Much As Text, EMNLP 2023).

The attacker holds the target texts' embeddings (leaked by the target embedder) and black-box
access to that embedder; it has auxiliary texts of the same distribution. It
1. embeds the aux texts through the counted query and trains an inversion model (embedding ->
   pseudo-tokens -> T5 -> text, v2t_models.InversionModel) on them (the paper's "base model", §3);
2. decodes each aux embedding with it, embeds those hypotheses (counted) and trains the corrector
   (target embedding, hypothesis, hypothesis embedding -> text) on them, leaving out hypotheses that
   already equal their text (vec2text trainers/corrector.py filters "correct" examples);
3. inverts each leaked target embedding: a first hypothesis from the inversion model, then
   `correction_steps` corrector steps, each embedding the new candidates through the counted query.
   With sequence_beam_width w > 0, each step proposes w candidates (beam search) and the one whose
   embedding is closest (cosine) to the target's is kept, the current hypothesis included
   (vec2text's `return_best_hypothesis`); vec2text carries w hypotheses from step to step, here
   one is carried (simpler, w times fewer queries per step). w = 0 is plain greedy correction.

On the embedded track the T5 is trained from scratch (tiny config; the tokenizer a byte-level BPE
trained on aux). With a network, `decoder="t5-base"` starts both models from t5-base weights,
pinned by revision, as vec2text does (run_args.py: model_name_or_path "t5-base").
Seeded: torch's global RNG (dropout, initialisation) and the batch order come from `seed`.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import Field

from reconbench.core.progress import Progress
from reconbench.core.attack_errors import AttackError
from reconbench.core.attack_options import AttackOptions
from reconbench.text.attacks.base import TextAttack, TextReconstruction
from reconbench.text.attacks.v2t_models import CorrectorModel, InversionModel, encode_labels, new_t5, train_bpe
from reconbench.text.attacks.v2t_training import fit
from reconbench.text.items import TextItem

# t5-base on the Hub, pinned (the revision transformers' docs pin for google-t5/t5-base).
T5_BASE = ("google-t5/t5-base", "a9723ea7f1b39c1eae772870f3b547bf6ef7e6c1")
CHUNK = 256  # texts per generate/query call (memory only; no effect on the result)


class Vec2Text(TextAttack):
    name = "vec2text"
    paper = "Morris et al., Text Embeddings Reveal (Almost) As Much As Text, EMNLP 2023"
    family = "training"
    scenarios = ("static/black-box/same",)
    role = "embedder"
    variant = ("one hypothesis carried between correction steps (vec2text carries the beam); "
               "a tiny T5 from scratch on the embedded track")

    class Options(AttackOptions):
        decoder: Literal["scratch", "t5-base"] = Field("scratch", description="T5 from scratch, or pinned t5-base weights (network)")
        # Tiny from-scratch T5 (our choice: trains in minutes on two CPU cores); t5-base is 768/12/12.
        d_model: int = Field(128, ge=8, description="T5 width (scratch)")
        layers: int = Field(2, ge=1, description="encoder and decoder layers (scratch)")
        heads: int = Field(4, ge=1, description="attention heads (scratch)")
        dropout: float = Field(0.1, ge=0, lt=1, description="T5's dropout_rate (transformers' T5Config default)")
        vocab_size: int = Field(4096, ge=300, description="BPE vocabulary trained on aux (scratch)")
        num_repeat_tokens: int = Field(16, ge=1, description="pseudo-tokens per embedding (vec2text run_args default 16)")
        max_length: int = Field(48, ge=4, description="tokens per text, eos included (vec2text: max_seq_length 128; paper §5: 32)")
        aux_limit: int = Field(0, ge=0, description="train on the first N aux texts (0 = all)")
        batch_size: int = Field(32, ge=1, description="training batch (vec2text run_args: 128)")
        # vec2text's lr 2e-5 (run_args default) fine-tunes a pretrained T5; a T5 from scratch needs more.
        lr: float = Field(2e-3, gt=0, description="AdamW learning rate (scratch: 2e-3; vec2text fine-tuning t5-base: 2e-5)")
        warmup_steps: int = Field(100, ge=0, description="linear warmup steps (vec2text: 4000 at batch 32)")
        inversion_epochs: int = Field(20, ge=1, description="inversion-model epochs over aux")
        corrector_epochs: int = Field(5, ge=0, description="corrector epochs over aux hypotheses (0: no corrector)")
        correction_steps: int = Field(3, ge=0, description="corrector steps at inversion time (Morris et al. Table 1: up to 50)")
        sequence_beam_width: int = Field(4, ge=0, description="candidates per step, best by cosine kept (paper: 8; 0 = greedy)")

    presets = {
        "quick": {"d_model": 64, "vocab_size": 1024, "num_repeat_tokens": 4, "max_length": 32, "aux_limit": 400,
                  "batch_size": 16, "lr": 3e-3, "warmup_steps": 50, "inversion_epochs": 30, "corrector_epochs": 5,
                  "correction_steps": 1, "sequence_beam_width": 2},
        # vec2text run_args defaults (t5-base, batch 128, lr 2e-5, 30 epochs, 128 tokens; warmup 4000 at batch 32 =
        # 1000 at 128) and Morris et al.'s best inversion setting (50 steps, sequence beam width 8, Table 1).
        "paper": {"decoder": "t5-base", "batch_size": 128, "lr": 2e-5, "warmup_steps": 1000, "max_length": 128,
                  "inversion_epochs": 30, "corrector_epochs": 30, "correction_steps": 50, "sequence_beam_width": 8},
    }

    def run(self, knowledge, *, seed: int, progress: Progress) -> TextReconstruction:
        c = self.config
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        aux = knowledge.aux.texts
        aux = aux[: c["aux_limit"]] if c["aux_limit"] else aux
        if not aux:
            raise AttackError("vec2text needs auxiliary texts to train on; the aux split is empty")
        query = knowledge.query
        aux_emb = _embed(query, aux, progress, "vec2text: embedding aux texts")
        dim = aux_emb.shape[1]
        tokenizer, make_t5 = self._decoder(aux)
        labels = encode_labels(tokenizer, aux, c["max_length"])
        pad = tokenizer.pad_token_id
        train = dict(pad_id=pad, batch_size=c["batch_size"], lr=c["lr"], warmup_steps=c["warmup_steps"], generator=gen, progress=progress)

        inversion = InversionModel(make_t5(), dim, c["num_repeat_tokens"])
        inv_loss = fit(inversion, inversion.loss, [aux_emb, labels], token_columns=(1,), epochs=c["inversion_epochs"],
                       label="vec2text: training the inversion model", **train)
        corrector, kept = None, 0
        if c["corrector_epochs"] and c["correction_steps"]:
            hyps = self._decode(tokenizer, [inversion.generate(e, c["max_length"]) for e in aux_emb.split(CHUNK)])
            keep = [i for i, (h, t) in enumerate(zip(hyps, aux)) if h != t]  # vec2text: filter_correct_examples
            kept = len(keep)
            if keep:
                hyp_emb = _embed(query, [hyps[i] for i in keep], progress, "vec2text: embedding aux hypotheses")
                hyp_ids = encode_labels(tokenizer, [hyps[i] for i in keep], c["max_length"])
                corrector = CorrectorModel(make_t5(), dim, c["num_repeat_tokens"])

                def cor_loss(e, he, hi, lab):
                    return corrector.loss(e, he, hi, hi != pad, lab)

                fit(corrector, cor_loss, [aux_emb[keep], hyp_emb, hyp_ids, labels[keep]], token_columns=(2, 3),
                    epochs=c["corrector_epochs"], label="vec2text: training the corrector", **train)

        target = knowledge.target_embeddings
        texts = self._decode(tokenizer, [inversion.generate(e, c["max_length"]) for e in target.split(CHUNK)])
        if corrector is not None:
            texts = self._correct(corrector, tokenizer, query, target, texts, progress)
        items = tuple(TextItem(i, t) for i, t in zip(knowledge.target_ids, texts))
        return TextReconstruction(items, {
            "queries": knowledge.queries, "aux_texts": len(aux), "corrector_examples": kept,
            "inversion_final_loss": round(inv_loss, 4), "decoder": c["decoder"],
        })

    def _correct(self, corrector, tokenizer, query, target: torch.Tensor, texts: list[str], progress: Progress) -> list[str]:
        c = self.config
        width = c["sequence_beam_width"]
        beams = max(width, 1)
        cur_emb = _embed(query, texts, progress, "vec2text: embedding first hypotheses")
        with progress.task("vec2text: correction steps", c["correction_steps"]) as advance:
            for _ in range(c["correction_steps"]):
                cands: list[str] = []
                for rows in torch.arange(len(texts)).split(CHUNK):
                    hyp = [texts[i] for i in rows]
                    ids = encode_labels(tokenizer, hyp, c["max_length"])
                    out = corrector.generate(target[rows], cur_emb[rows], ids, ids != tokenizer.pad_token_id, c["max_length"], beams)
                    cands.extend(self._decode(tokenizer, [out]))
                cand_emb = query(cands).reshape(len(texts), beams, -1)
                if width == 0:
                    texts, cur_emb = cands, cand_emb[:, 0]
                else:
                    sims = torch.nn.functional.cosine_similarity(cand_emb, target[:, None, :], dim=-1)
                    now = torch.nn.functional.cosine_similarity(cur_emb, target, dim=-1)
                    best = sims.argmax(1)
                    better = sims.max(1).values > now  # return_best_hypothesis: never trade a closer text away
                    texts = [cands[i * beams + int(b)] if ok else t for i, (b, ok, t) in enumerate(zip(best, better, texts))]
                    cur_emb = torch.where(better[:, None], cand_emb[torch.arange(len(texts)), best], cur_emb)
                advance(1)
        return texts

    def _decoder(self, aux: list[str]) -> tuple[Any, Any]:
        c = self.config
        if c["decoder"] == "t5-base":
            try:
                from transformers import AutoTokenizer, T5ForConditionalGeneration

                tokenizer = AutoTokenizer.from_pretrained(T5_BASE[0], revision=T5_BASE[1])
                T5ForConditionalGeneration.from_pretrained(T5_BASE[0], revision=T5_BASE[1])  # fetch once, fail early
            except Exception as exc:  # offline, or the Hub refused: one line, not a traceback
                raise AttackError(f"vec2text: cannot load {T5_BASE[0]}@{T5_BASE[1][:7]} ({type(exc).__name__}); "
                                  "use decoder=scratch offline") from None
            return tokenizer, lambda: T5ForConditionalGeneration.from_pretrained(T5_BASE[0], revision=T5_BASE[1])
        tokenizer = train_bpe(aux, c["vocab_size"])
        args = (len(tokenizer), c["d_model"], c["layers"], c["heads"], c["dropout"], tokenizer.pad_token_id, tokenizer.eos_token_id)
        return tokenizer, lambda: new_t5(*args)

    @staticmethod
    def _decode(tokenizer, outputs: list[torch.Tensor]) -> list[str]:
        return [" ".join(t.split()) for out in outputs for t in tokenizer.batch_decode(out, skip_special_tokens=True)]


def _embed(query, texts: list[str], progress: Progress, label: str) -> torch.Tensor:
    rows = []
    with progress.task(label, len(texts)) as advance:
        for start in range(0, len(texts), CHUNK):
            rows.append(query(texts[start : start + CHUNK]))
            advance(len(texts[start : start + CHUNK]))
    return torch.cat(rows).float()
