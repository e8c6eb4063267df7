"""One judge call through the `openai` client, with bounded timeouts and backoff on 429 / 5xx.

The client's own retries are off (max_retries=0) so that every wait is ours: HTTP 408, 409, 429 and 5xx wait
for the server's Retry-After (seconds or an HTTP date; retry-after-ms too) when it sends one, else
an exponential backoff; timeouts and dropped connections retry the same way; after `max_retries`
the call fails (it is not cached, so a rerun asks again). Other 4xx are errors of the request (bad
model name, bad key) and stop the study at once.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

DEFAULT_TIMEOUT = 60.0  # seconds per request (connect + read); a vision answer of one token takes a few
MAX_WAIT = 120.0  # never sleep longer than this for one Retry-After
BASE_BACKOFF = 1.0
RETRY_STATUS = (408, 409, 429)  # with every 5xx: the statuses the openai client itself retries


class JudgeError(Exception):
    """A request the endpoint refuses for good (4xx other than 429), or a missing model/key."""


class CallFailed(Exception):
    """A call that still failed after every retry (rate limits, server errors, timeouts)."""


@dataclass
class Reply:
    text: str | None
    model: str  # the model name as the endpoint reports it in the response


@dataclass
class Endpoint:
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = 5
    sleep: Callable[[float], None] = time.sleep
    waits: list[float] = field(default_factory=list)  # every backoff slept, in order (reported, tested)

    def __post_init__(self):
        self.base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.api_key = self.api_key or os.environ.get("OPENAI_API_KEY") or None
        if not self.api_key:
            raise JudgeError("no API key: set OPENAI_API_KEY or pass --api-key (a local server accepts any value)")
        if not 0 < self.timeout <= 600:
            raise JudgeError(f"--timeout must be in (0, 600] seconds, got {self.timeout}")
        self._client = None

    @property
    def client(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0)
        return self._client

    def public_url(self) -> str:
        """The base URL without credentials or query (recorded in the study; the key never is)."""
        url = self.base_url or "https://api.openai.com/v1"
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def ask(self, request: dict) -> Reply:
        import openai

        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.chat.completions.create(**request)
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status not in RETRY_STATUS and status < 500:
                    raise JudgeError(f"the endpoint refused the request: HTTP {status} ({_short(exc)})") from None
                failure = f"HTTP {status}"
                wait = retry_after(exc.response.headers)
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                failure, wait = type(exc).__name__, None
            else:
                choice = response.choices[0] if response.choices else None
                text = choice.message.content if choice is not None and choice.message is not None else None
                return Reply(text=text, model=str(response.model or request["model"]))
            if attempt == self.max_retries:
                raise CallFailed(f"{failure} after {self.max_retries + 1} attempts")
            if wait is None:  # exponential backoff with jitter: concurrent workers do not retry in step
                wait = BASE_BACKOFF * 2 ** attempt * (1 + random.random() / 4)
            wait = min(wait, MAX_WAIT)
            self.waits.append(wait)
            self.sleep(wait)
        raise AssertionError("unreachable")


def retry_after(headers) -> float | None:
    """Seconds to wait from retry-after-ms or Retry-After (delta seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(0.0, when.timestamp() - time.time())


def _short(exc: Exception) -> str:
    text = str(exc).replace("\n", " ")
    return text[:200]
