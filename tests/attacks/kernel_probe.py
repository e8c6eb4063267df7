"""Run in a fresh interpreter inside the sandbox (no guards): tries the kernel calls and socket
families issue 36 found open, and writes {call: result} as JSON to the descriptor in argv[1]."""

import ctypes
import errno
import json
import os
import platform
import socket
import sys

X86 = platform.machine() == "x86_64"
NR = {"pidfd_open": 434, "pidfd_getfd": 438, "kcmp": (312 if X86 else 272), "memfd_secret": 447,
      "personality": (135 if X86 else 92), "modify_ldt": 154 if X86 else None}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def call(*args) -> str:
    ret = libc.syscall(*[ctypes.c_long(a) for a in args])
    return f"ok {ret}" if ret >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def sock(family: int, kind: int) -> str:
    try:
        socket.socket(family, kind).close()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))


out = {}
pidfd = libc.syscall(ctypes.c_long(NR["pidfd_open"]), ctypes.c_long(1), ctypes.c_long(0))
out["pidfd_open 1"] = "ok" if pidfd >= 0 else errno.errorcode.get(ctypes.get_errno())
out["pidfd_getfd"] = call(NR["pidfd_getfd"], pidfd, 0, 0) if pidfd >= 0 else "no pidfd"
out["kcmp"] = call(NR["kcmp"], os.getpid(), 1, 0, 0, 0)  # KCMP_FILE
out["memfd_secret"] = call(NR["memfd_secret"], 0)
out["personality ADDR_NO_RANDOMIZE"] = call(NR["personality"], 0x0040000)
out["personality READ_IMPLIES_EXEC"] = call(NR["personality"], 0x0400000)
out["personality query"] = call(NR["personality"], 0xFFFFFFFF)
if NR["modify_ldt"] is not None:
    buf = ctypes.create_string_buffer(16)
    out["modify_ldt"] = call(NR["modify_ldt"], 0, ctypes.addressof(buf), 16)
for name, family, kind in (("AF_NETLINK", 16, socket.SOCK_RAW), ("AF_VSOCK", 40, socket.SOCK_STREAM),
                           ("AF_PACKET", 17, socket.SOCK_RAW), ("AF_BLUETOOTH", 31, socket.SOCK_STREAM),
                           ("AF_ALG", 38, socket.SOCK_SEQPACKET), ("AF_UNIX", 1, socket.SOCK_STREAM),
                           ("AF_INET", 2, socket.SOCK_STREAM), ("AF_INET6", 10, socket.SOCK_DGRAM)):
    out[f"socket {name}"] = sock(family, kind)
try:
    socket.socketpair(16, socket.SOCK_RAW)
    out["socketpair AF_NETLINK"] = "ok"
except OSError as exc:
    out["socketpair AF_NETLINK"] = errno.errorcode.get(exc.errno)
with os.fdopen(int(sys.argv[1]), "w") as f:
    f.write(json.dumps(out))
