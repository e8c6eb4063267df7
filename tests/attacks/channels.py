"""Attacks that lie on the channel to the evaluator (tests/test_sandbox_channels.py): text it prints,
declarations and configurations it records, messages it half-sends or answers it never reads.
Each reports as one line `HOSTILE-REPORT <json>` on stderr where it reports at all."""

from __future__ import annotations

import os
import socket
import struct
import time

import numpy as np
from hostile import report, zeros

from reconbench.image.attacks.base import Attack
from reconbench.pipeline.isolation import protocol

# What a terminal or a CI runner would obey: a new line holding workflow commands, a screen clear, a
# window title, OSC 52 (the clipboard), a bidi override, rich markup (a hyperlink; a closing tag that
# breaks rich's parser).
EVIL = ("{token}\n::error::forged-{token}\n::add-mask::{token}\x1b[2J\x1b]0;title\x07\x1b]52;c;eA==\x07\u202e"
        "[link=https://example.invalid]x[/link] [/]")


class Says(Attack):
    """Prints the text on stdout, names a progress bar with it, then fails with it as its message."""

    name, paper, family = "says", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"token": "x"}

    def run(self, knowledge, *, seed, progress):
        text = EVIL.format(token=self.config["token"])
        print(text, flush=True)
        with progress.task(text, 2) as advance:
            advance(1)
        raise RuntimeError(text)


class Declares(Attack):
    """Its process declares a built-in attack's name: the declaration is the process's own message."""

    name, paper, family = "declares", "none", "training"
    scenarios = ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        return zeros(knowledge)


_send = protocol.send


def _lying_send(conn, header, *arrays):
    if header.get("op") == "ready" and header["attack"]["name"] == "declares":
        header["attack"]["name"] = "mi-face"
    return _send(conn, header, *arrays)


protocol.send = _lying_send  # runs in the attack's process only (what a hostile attack may do there)


class Reports(Attack):
    """Returns honest zeros with a configuration no result can record."""

    name, paper, family = "reports", "none", "training"
    scenarios = ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        self.config["nested"] = {"a": [1, 2]}
        return zeros(knowledge)


class Stalls(Attack):
    """Leaves the evaluator waiting on the channel: part of a message (`partial`), a large query whose
    answer it never reads (`unread`), its end shut (`closed`: the evaluator waited for the process to
    exit); then sleeps far past the run's wall-time limit."""

    name, paper, family = "stalls", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"case": "partial", "sleep": 600}

    def run(self, knowledge, *, seed, progress):
        conn = knowledge.query._conn
        if self.config["case"] == "partial":  # a frame's length, then a few bytes of its 1000
            os.write(conn.fileno(), struct.pack("!i", 1000) + b'{"op": ')
        elif self.config["case"] == "closed":  # its end of the channel shut, its process alive
            socket.socket(fileno=os.dup(conn.fileno())).shutdown(socket.SHUT_RDWR)
        else:  # 65,536 images in: 2.6 MB of probabilities out, more than the socket holds
            protocol.send(conn, {"op": "query", "view": "query"},
                          np.zeros((65536, *knowledge.input_shape), np.float32))
        report({"stalling": self.config["case"]})
        time.sleep(self.config["sleep"])
        return zeros(knowledge)


class Asks(Attack):
    """Sends query messages whose view is not a name (a list, an object), then returns honest zeros."""

    name, paper, family = "asks", "none", "training"
    scenarios = ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        conn = knowledge.query._conn
        answers = []
        for view in (["query"], {"a": 1}):
            protocol.send(conn, {"op": "query", "view": view}, np.zeros((1, *knowledge.input_shape), np.float32))
            answers.append(protocol.recv(conn)[0])
        report({"answers": answers})
        return zeros(knowledge)


class Interrupts(Attack):
    """Forges a Ctrl-C: reports a KeyboardInterrupt (`report`), or exits with the code of one (`exit`)."""

    name, paper, family = "interrupts", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"case": "report"}

    def run(self, knowledge, *, seed, progress):
        if self.config["case"] == "exit":
            os._exit(130)
        raise KeyboardInterrupt
