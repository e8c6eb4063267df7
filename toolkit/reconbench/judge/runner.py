"""Plan a study (targets, candidates, one request per target x repeat x order mode) and run it.

Requests run on a thread pool (`concurrency`); each is answered from the cache when it can be. An
answer that is not a valid index is asked again up to `invalid_retries` times, then counted invalid.
A call that fails for good (see client.py) is not cached and is counted; the study is then not
written, and a rerun asks only the failed calls again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reconbench.judge.cache import AnswerCache, request_key
from reconbench.judge.client import CallFailed, Endpoint
from reconbench.judge.images import DEFAULT_SIZE, ImageSet
from reconbench.judge.order import MODES, candidate_order, condition_of
from reconbench.judge.prompt import ANSWER_CHARS, build_prompt, parse_answer
from reconbench.judge.selection import Condition, check_conditions, load_condition, sample_targets, select_candidates, target_split

SOK_REPEATS = 5  # SoK §6.1: "Repeat each query 5 times"
INVALID_RETRIES = 2  # re-asks of an answer that is not a valid index before it counts as invalid


@dataclass
class Options:
    model: str
    targets: int | None = None
    repeats: int = SOK_REPEATS
    seed: int = 0
    modes: tuple[str, ...] = ("random",)
    image_size: int = DEFAULT_SIZE
    temperature: float | None = None  # None: not sent, the endpoint's default (the SoK states none)
    max_tokens: int | None = None
    invalid_retries: int = INVALID_RETRIES
    concurrency: int = 4

    def check(self) -> None:
        if not self.model.strip():
            raise ValueError("--model must name the judge model")
        if not 1 <= self.repeats <= 20:
            raise ValueError(f"--repeats must be between 1 and 20, got {self.repeats}")
        if not self.modes or any(m not in MODES for m in self.modes) or len(set(self.modes)) != len(self.modes):
            raise ValueError(f"--order must be random, fixed or both, got {'+'.join(self.modes)}")
        if not 0 <= self.invalid_retries <= 10:
            raise ValueError(f"--invalid-retries must be between 0 and 10, got {self.invalid_retries}")
        if not 1 <= self.concurrency <= 64:
            raise ValueError(f"--concurrency must be between 1 and 64, got {self.concurrency}")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ValueError(f"--temperature must be between 0 and 2, got {self.temperature}")

    def params(self) -> dict:
        """The request parameters that change an answer (part of every cache key)."""
        return {"image_size": self.image_size, "temperature": self.temperature, "max_tokens": self.max_tokens,
                "layout": LAYOUT}


# One user message: the prompt, then image 1 (the target) and images 2..K+1 (the candidates).
# The SoK does not say whether images went separately or as a grid; separately, in this order.
LAYOUT = "one user message: prompt text, then the K+1 images as separate PNG data URLs (target first)"


@dataclass
class Call:
    mode: str
    target: int  # position in plan.indices
    repeat: int
    order: list[int]
    key: str


@dataclass
class Plan:
    conditions: list[Condition]
    track: str
    split: str
    n_targets_total: int
    indices: list[int]
    target_labels: list[int]
    target_images: np.ndarray
    candidates: list[list[dict]]  # [target][condition]
    prompt: str
    options: Options
    images: ImageSet
    calls: list[Call] = field(default_factory=list)

    @property
    def k(self) -> int:
        return len(self.conditions)

    def image_stack(self, call: Call) -> list[np.ndarray]:
        t = call.target
        cands = [self.conditions[c].images[self.candidates[t][c]["rec_index"]] for c in call.order]
        return [self.target_images[t], *cands]

    def request(self, call: Call) -> dict:
        content: list[dict] = [{"type": "text", "text": self.prompt}]
        content += [{"type": "image_url", "image_url": {"url": self.images.url(img)}} for img in self.image_stack(call)]
        req: dict = {"model": self.options.model, "messages": [{"role": "user", "content": content}]}
        if self.options.temperature is not None:
            req["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            req["max_tokens"] = self.options.max_tokens
        return req


def plan_study(entry_dirs: list[Path], options: Options) -> Plan:
    options.check()
    conditions = [load_condition(Path(d)) for d in entry_dirs]
    check_conditions(conditions)
    images, labels, split = target_split(conditions[0].track, conditions[0].training)
    indices = sample_targets(len(images), options.targets, options.seed)
    per_condition = [select_candidates(images, labels, indices, c) for c in conditions]
    candidates = [[per_condition[c][t] for c in range(len(conditions))] for t in range(len(indices))]
    plan = Plan(conditions=conditions, track=conditions[0].track, split=split, n_targets_total=len(images),
                indices=indices, target_labels=[int(labels[i]) for i in indices], target_images=images[indices],
                candidates=candidates, prompt=build_prompt(len(conditions)), options=options,
                images=ImageSet(options.image_size))
    for mode in options.modes:
        for t, index in enumerate(indices):
            for r in range(options.repeats):
                order = candidate_order(mode, plan.k, options.seed, index, r)
                call = Call(mode, t, r, order, "")
                hashes = [plan.images.hash(img) for img in plan.image_stack(call)]
                call.key = request_key(options.model, plan.prompt, hashes, order, r, {**options.params(), "mode": mode})
                plan.calls.append(call)
    return plan


def redacted_request(plan: Plan, call: Call) -> str:
    """The first request as JSON, images shortened (a CelebA study's PNGs are long); never the key."""
    req = plan.request(call)
    for part in req["messages"][0]["content"]:
        if part["type"] == "image_url":
            url = part["image_url"]["url"]
            part["image_url"]["url"] = f"{url[:40]}… ({len(url)} characters)"
    return json.dumps(req, indent=2, ensure_ascii=False)


@dataclass
class Tally:
    done: int = 0
    cached: int = 0
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def ask_with_reasks(endpoint: Endpoint, request: dict, k: int, invalid_retries: int) -> dict:
    answers: list[str | None] = []
    position = None
    model = request["model"]
    for _ in range(invalid_retries + 1):
        reply = endpoint.ask(request)
        model = reply.model
        answers.append(None if reply.text is None else reply.text[:ANSWER_CHARS])
        position = parse_answer(reply.text, k)
        if position is not None:
            break
    return {"answers": answers, "position": position, "model": model}


def run_plan(plan: Plan, endpoint: Endpoint, cache: AnswerCache,
             progress: Callable[[Tally], None] | None = None) -> tuple[dict[str, dict], Tally]:
    """Answer every call (cache first); returns ({key: record}, tally). Raises JudgeError at once."""
    records: dict[str, dict] = {}
    tally = Tally()

    def one(call: Call) -> None:
        record = cache.get(call.key)
        kind = "cached"
        if record is None:
            try:
                record = ask_with_reasks(endpoint, plan.request(call), plan.k, plan.options.invalid_retries)
            except CallFailed:
                kind = "failed"
            else:
                cache.put(call.key, record)
                kind = "done"
        with tally.lock:
            setattr(tally, kind, getattr(tally, kind) + 1)
            if record is not None:
                records[call.key] = record
        if progress is not None:
            progress(tally)

    pool = ThreadPoolExecutor(max_workers=plan.options.concurrency)
    try:
        futures = [pool.submit(one, call) for call in plan.calls]
        finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for f in finished:
            if f.exception() is not None:
                raise f.exception()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return records, tally


def votes_of(plan: Plan, records: dict[str, dict], mode: str) -> list[list[dict]]:
    """Per target, the votes of one order mode: answers mapped back to conditions."""
    out: list[list[dict]] = [[] for _ in plan.indices]
    for call in plan.calls:
        if call.mode != mode:
            continue
        rec = records[call.key]
        out[call.target].append({"repeat": call.repeat, "order": call.order, "answers": rec["answers"],
                                 "position": rec["position"], "condition": condition_of(call.order, rec["position"])})
    return out
