"""A scripted OpenAI-compatible chat-completions server for judge tests (stdlib, 127.0.0.1, random port).

It speaks the real protocol over a socket: POST /v1/chat/completions with a Bearer key, a JSON body
of messages whose content holds a text part and image_url parts (PNG data URLs), answered with a
chat.completion object. Answers come from a policy that sees the decoded images:

    best_policy     the candidate nearest the target (least MSE): a judge that sees the truth
    constant("2")   always the same text: pure position bias

`script` overrides the first requests one by one, to inject failures:
    {"status": 429, "headers": {"Retry-After": "1"}}   {"status": 500}   {"hang": 5.0}   {"text": "maybe"}
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from reconbench.judge.images import decode_data_url

MODEL = "scripted-test-judge"
Policy = Callable[[list[np.ndarray], str], str]


def best_policy(images: list[np.ndarray], prompt: str) -> str:
    target = images[0].astype(np.float64)
    mse = [float(((img.astype(np.float64) - target) ** 2).mean()) for img in images[1:]]
    return str(int(np.argmin(mse)) + 2)  # argmin: the first of equals, as a reader scanning left to right


def constant(text: str) -> Policy:
    return lambda images, prompt: text


class JudgeServer:
    def __init__(self, policy: Policy = best_policy, script: list[dict] | None = None, model: str = MODEL,
                 key: str = "test-key"):
        self.policy, self.script, self.model, self.key = policy, list(script or []), model, key
        self.requests: list[dict] = []  # every request received: {"time", "action", "images"}
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True  # a hanging handler must not block shutdown
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                if self.headers.get("Authorization") != f"Bearer {server.key}":
                    return self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                content = body["messages"][0]["content"]
                prompt = next(p["text"] for p in content if p["type"] == "text")
                images = [decode_data_url(p["image_url"]["url"]) for p in content if p["type"] == "image_url"]
                with server.lock:
                    action = server.script.pop(0) if server.script else None
                    server.requests.append({"time": time.monotonic(), "action": action, "images": len(images)})
                if action and "hang" in action:
                    time.sleep(action["hang"])
                    try:  # the client gave up long ago: its socket is closed
                        return self._send(200, _completion(server.model, "2"))
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True
                        return None
                if action and "status" in action:
                    return self._send(action["status"], {"error": {"message": "scripted failure", "type": "server_error"}},
                                      action.get("headers"))
                text = action["text"] if action and "text" in action else server.policy(images, prompt)
                return self._send(200, _completion(server.model, text))

        return Handler


def _completion(model: str, text: str) -> dict:
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
        "model": model, "system_fingerprint": None,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
    }
