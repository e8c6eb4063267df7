"""The SoK's judge prompt (§6.1, verbatim for K = 6) and the parsing of its answers."""

from __future__ import annotations

import re

# SoK §6.1, verbatim: "From the second to the seventh image, which image is more similar to the first
# one? Please make sure your response must be the index of that image and don't say any other words."
# With K candidates the last image is the (K+1)-th, so only the ordinal changes.
ORDINALS = {3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh"}
MIN_CONDITIONS, MAX_CONDITIONS = 2, 6
ANSWER_CHARS = 200  # an answer is stored up to this many characters (a valid one is a digit)

# A valid answer is the index alone; "3", " 3.", "Image 3", "#3" are read as 3 (the prompt asks for
# the index only, models add a period or the word now and then). Anything else is invalid.
_ANSWER = re.compile(r"^\s*(?:image\s*)?(?:#|no\.?\s*)?(\d{1,2})\s*[.)]?\s*$", re.I)


def build_prompt(k: int) -> str:
    if not MIN_CONDITIONS <= k <= MAX_CONDITIONS:
        raise ValueError(f"a judge study compares {MIN_CONDITIONS} to {MAX_CONDITIONS} conditions, got {k}")
    return (f"From the second to the {ORDINALS[k + 1]} image, which image is more similar to the first one? "
            "Please make sure your response must be the index of that image and don't say any other words.")


def parse_answer(text: str | None, k: int) -> int | None:
    """The image index (2..k+1) the answer names, or None when it is not a valid index."""
    if text is None:
        return None
    match = _ANSWER.match(text)
    if not match:
        return None
    index = int(match.group(1))
    return index if 2 <= index <= k + 1 else None
