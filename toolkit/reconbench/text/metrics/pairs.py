"""Every reconstruction against every pool text, per text metric: the matrices of the membership gap.

The membership gap (reconbench.core.membership) needs each reconstruction's score against all
targets and all holdout texts (500 x 1,000 pairs on lee-news). Per-pair calls of the metric libraries
cost ~1.4 ms (sacrebleu sentence BLEU) and ~0.1 ms (rouge-score) each: minutes per entry. So the
statistics are computed here for all pairs at once, from the libraries' own tokenizers and formulas,
and the tests check every value against the libraries' per-pair results:

- bleu: sacrebleu's sentence BLEU with bleu.SETTINGS (13a, smooth "exp", 4-grams, no effective order;
  BLEU.compute_bleu's rules: no match at any order -> 0, the exp smoothing halves a zero order's
  precision each time, brevity penalty exp(1 - ref/hyp)), / 100. Clipped n-gram matches for all pairs
  are sparse products: min(a, b) = sum_k [a >= k][b >= k].
- rouge_l: rouge-score's F-measure of the longest common subsequence on its tokenizer's tokens
  (rouge.USE_STEMMER); LCS lengths bit-parallel for all pairs at once (lcs_matrix).
- similarity: cosines of the same MiniLM embeddings as similarity.py.
- exact_match: exact.normalise(r) == exact.normalise(t), as 1.0 / 0.0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

MAX_ORDER = 4


def _bleu_tokens(texts: Sequence[str]) -> list[list[str]]:
    from sacrebleu.metrics import BLEU

    from .bleu import SETTINGS

    scorer = BLEU(tokenize=SETTINGS["tokenize"], smooth_method=SETTINGS["smooth_method"], lowercase=SETTINGS["lowercase"],
                  force=SETTINGS["force"], effective_order=SETTINGS["use_effective_order"])
    return [scorer._preprocess_segment(t).split() for t in texts]


def _ngram_layers(docs: list[list[str]], vocab: dict, n: int):
    """Sparse indicator matrices [count >= k] (docs x vocab) for k = 1, 2, ..."""
    from scipy import sparse

    rows, cols, counts = [], [], []
    for i, tokens in enumerate(docs):
        for gram, c in Counter(tuple(tokens[j:j + n]) for j in range(len(tokens) - n + 1)).items():
            rows.append(i)
            cols.append(vocab.setdefault(gram, len(vocab)))
            counts.append(c)
    rows, cols, counts = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(counts, dtype=np.int64)
    return rows, cols, counts, sparse


def bleu_matrix(recs: Sequence[str], pool: Sequence[str]) -> np.ndarray:
    """(len(recs), len(pool)) sentence BLEU of each reconstruction against each pool text, in [0, 1]."""
    hyp, ref = _bleu_tokens(recs), _bleu_tokens(pool)
    hyp_len = np.array([len(t) for t in hyp], dtype=np.float64)[:, None]
    ref_len = np.array([len(t) for t in ref], dtype=np.float64)[None, :]
    correct = []
    for n in range(1, MAX_ORDER + 1):
        vocab: dict = {}
        hr, hc, hk, sparse = _ngram_layers(hyp, vocab, n)
        rr, rc, rk, _ = _ngram_layers(ref, vocab, n)
        shape_h, shape_r = (len(hyp), max(1, len(vocab))), (len(ref), max(1, len(vocab)))
        total = np.zeros((len(hyp), len(ref)))
        for k in range(1, int(max(hk.max(initial=0), rk.max(initial=0))) + 1):
            a = sparse.csr_matrix((np.ones(int((hk >= k).sum())), (hr[hk >= k], hc[hk >= k])), shape=shape_h)
            b = sparse.csr_matrix((np.ones(int((rk >= k).sum())), (rr[rk >= k], rc[rk >= k])), shape=shape_r)
            total += (a @ b.T).toarray()
        correct.append(total)
    totals = [np.broadcast_to(np.maximum(hyp_len - n + 1, 0), correct[0].shape) for n in range(1, MAX_ORDER + 1)]
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(hyp_len >= ref_len, 1.0, np.where(hyp_len > 0, np.exp(1 - ref_len / np.maximum(hyp_len, 1)), 0.0))
        smooth = np.ones(correct[0].shape)
        log_sum = np.zeros(correct[0].shape)
        stopped = np.zeros(correct[0].shape, dtype=bool)
        for n in range(MAX_ORDER):
            stopped |= totals[n] == 0  # compute_bleu's `break`: this and every higher order stay 0
            zero = correct[n] == 0
            smooth = np.where(~stopped & zero, smooth * 2, smooth)
            precision = np.where(zero, 100.0 / (smooth * totals[n]), 100.0 * correct[n] / totals[n])
            log_sum += np.where(stopped, -9999999999.0, np.log(np.where(stopped, 1.0, precision)))
        score = bp * np.exp(log_sum / MAX_ORDER)
    no_match = sum(correct) == 0
    return np.where(no_match, 0.0, score) / 100.0


def _rouge_tokens(texts: Sequence[str]) -> list[list[str]]:
    from rouge_score.rouge_scorer import RougeScorer

    from .rouge import USE_STEMMER

    tokenizer = RougeScorer(["rougeL"], use_stemmer=USE_STEMMER)._tokenizer
    return [tokenizer.tokenize(t) for t in texts]


def lcs_matrix(hyp: list[list[str]], ref: list[list[str]]) -> np.ndarray:
    """(len(hyp), len(ref)) LCS lengths, bit-parallel over each reference (Allison & Dix 1986; Hyyro
    2004): V = ~0; for each hypothesis token t: U = V & M_t; V = (V + U) | (V - U); LCS = zeros of V
    in the reference's m bits. One uint64 per pair, so references of at most 63 tokens; longer ones
    get the textbook table (rare: lee-news texts have at most 40 words)."""
    vocab: dict[str, int] = {}
    for d in hyp + ref:
        for t in d:
            vocab.setdefault(t, len(vocab))
    short = [j for j, d in enumerate(ref) if len(d) <= 63]
    masks = np.zeros((len(vocab) + 1, len(short)), dtype=np.uint64)  # token -> bit mask in each reference
    for col, j in enumerate(short):
        for pos, t in enumerate(ref[j]):
            masks[vocab[t], col] |= np.uint64(1) << np.uint64(pos)
    width = np.array([len(ref[j]) for j in short], dtype=np.uint64)
    low = np.where(width == 64, np.uint64(2**64 - 1), (np.uint64(1) << width) - np.uint64(1))
    out = np.zeros((len(hyp), len(ref)), dtype=np.float64)
    a_max = max((len(d) for d in hyp), default=0)
    tokens = np.full((len(hyp), a_max), len(vocab), dtype=np.int64)  # padding: the empty mask
    for i, d in enumerate(hyp):
        tokens[i, :len(d)] = [vocab[t] for t in d]
    v = np.full((len(hyp), len(short)), np.uint64(2**64 - 1), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(a_max):
            u = v & masks[tokens[:, i]]
            v = (v + u) | (v - u)
    out[:, short] = width[None, :].astype(np.float64) - np.bitwise_count(v & low[None, :]).astype(np.float64)
    for j in set(range(len(ref))) - set(short):
        for i, d in enumerate(hyp):
            out[i, j] = _lcs_table(d, ref[j])
    return out


def _lcs_table(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def rouge_l_matrix(recs: Sequence[str], pool: Sequence[str]) -> np.ndarray:
    """(len(recs), len(pool)) ROUGE-L F-measure (rouge-score's score(target=pool text, prediction=rec))."""
    hyp, ref = _rouge_tokens(recs), _rouge_tokens(pool)
    lcs = lcs_matrix(hyp, ref)
    hl = np.array([len(d) for d in hyp], dtype=np.float64)[:, None]
    rl = np.array([len(d) for d in ref], dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        p, rec = lcs / hl, lcs / rl
        f = np.where((p + rec) > 0, 2 * p * rec / (p + rec), 0.0)
    return np.where((hl == 0) | (rl == 0), 0.0, f)


def similarity_matrix(recs: Sequence[str], *pools: Sequence[str], device: str = "cpu", batch_size: int = 64) -> np.ndarray:
    """Cosines of each reconstruction against each text of the pools, in order. Each list is embedded
    (and cached per process) on its own, so the targets embedded for the board's own-target similarity
    are not embedded again here."""
    import torch

    from .similarity import embeddings

    a = embeddings(tuple(recs), str(device), batch_size)
    b = torch.cat([embeddings(tuple(pool), str(device), batch_size) for pool in pools])
    return (a @ b.T).cpu().numpy()


def exact_matrix(recs: Sequence[str], pool: Sequence[str]) -> np.ndarray:
    from .exact import normalise

    index: dict[str, int] = {}
    a = np.array([index.setdefault(normalise(t), len(index)) for t in recs])
    b = np.array([index.setdefault(normalise(t), len(index)) for t in pool])
    return (a[:, None] == b[None, :]).astype(np.float64)


MATRICES = {"bleu": bleu_matrix, "rouge_l": rouge_l_matrix, "exact_match": exact_matrix}
