"""A small seccomp filter for the attack's sandbox (bubblewrap's --seccomp): the kernel interfaces
that namespaces do not isolate, refused with EPERM.

Why it is needed on top of the namespaces (docs/sandbox.md): the kernel keyring is not a namespace.
A process inherits its parent's session keyring through fork, exec and bubblewrap alike, and the
"possessor" may read every key in it (measured here: a key added to the evaluator's session keyring
was readable inside the sandbox). So keyctl, add_key and request_key are refused. The rest of the
list closes interfaces an attack has no use for and that widen what it can reach in the kernel:
ptrace and process_vm_* (other processes' memory), new namespaces (clone/unshare with namespace
flags, setns: a nested user namespace hands out capabilities), mount and the new mount API, bpf,
perf_event_open, userfaultfd, io_uring, kernel modules, kexec, handles to files by inode
(open_by_handle_at), the kernel log, and TIOCSTI/TIOCLINUX (typing into a terminal). clone3 answers
ENOSYS, so the C library falls back to clone, whose flags a classic BPF filter can read.
Closed as classes (issue 36): reaching into another process (ptrace, process_vm_*, pidfd_getfd:
taking another process's descriptor, kcmp: comparing them, process_madvise); the execution domain
(personality beyond querying it or setting the default PER_LINUX; modify_ldt, x86's segment
tables); memory the kernel hides from its own tools (memfd_secret); and every socket family but
AF_UNIX, AF_INET and AF_INET6 (socket and socketpair answer EAFNOSUPPORT, as for a family the
kernel lacks): AF_NETLINK reaches kernel subsystems, AF_VSOCK the host's vsock port space, which no
network namespace covers, AF_PACKET, AF_BLUETOOTH, AF_ALG and the rest have no use here.
Syscalls of another ABI (32-bit x86, x32) are refused whole. Architectures: x86-64 and arm64; on
another the sandbox runs without this filter (`program()` returns None).
"""

from __future__ import annotations

import errno
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7, "arm64": 0xC00000B7}
# name: (x86-64 number, arm64 number), from <asm/unistd_64.h> and <asm-generic/unistd.h>
SYSCALLS = {
    "ioctl": (16, 29), "clone": (56, 220), "clone3": (435, 435),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fspick": (433, 433), "mount_setattr": (442, 442),
    "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264), "syslog": (103, 116), "acct": (163, 89), "swapon": (167, 224),
    "swapoff": (168, 225), "reboot": (169, 142), "quotactl": (179, 60),
    "pidfd_getfd": (438, 438), "kcmp": (312, 272), "process_madvise": (440, 440), "memfd_secret": (447, 447),
    "modify_ldt": (154, None), "personality": (135, 92), "socket": (41, 198), "socketpair": (53, 199),
}
ARGUMENT_CHECKED = ("ioctl", "clone", "clone3", "personality", "socket", "socketpair")
DENIED = tuple(n for n in SYSCALLS if n not in ARGUMENT_CHECKED)
SOCKET_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6
PERSONALITY_ALLOWED = (0, 0xFFFFFFFF)  # PER_LINUX; 0xffffffff only queries the current one
CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
X32_BIT = 0x40000000

# classic BPF opcodes
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (low 32 bits of the arguments)


def program(machine: str | None = None) -> bytes | None:
    """The filter as struct sock_filter[] bytes for `bwrap --seccomp FD`; None on other architectures."""
    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        return None
    index = 0 if machine == "x86_64" else 1
    nr = {name: numbers[index] for name, numbers in SYSCALLS.items()}
    code: list[tuple] = [  # (opcode, jump-if-true label or 0, jump-if-false label or 0, k); labels resolved below
        (LD_W_ABS, 0, 0, ARCH), (JEQ_K, 0, "deny", AUDIT_ARCH[machine]), (LD_W_ABS, 0, 0, NR),
    ]
    if machine == "x86_64":
        code.append((JGE_K, "deny", 0, X32_BIT))
    code += [(JEQ_K, "enosys", 0, nr["clone3"]), (JEQ_K, "clone", 0, nr["clone"]), (JEQ_K, "ioctl", 0, nr["ioctl"]),
             (JEQ_K, "socket", 0, nr["socket"]), (JEQ_K, "socket", 0, nr["socketpair"]),
             (JEQ_K, "personality", 0, nr["personality"])]
    code += [(JEQ_K, "deny", 0, nr[name]) for name in DENIED if nr[name] is not None]
    code += [(RET_K, 0, 0, RET_ALLOW),
             "clone", (LD_W_ABS, 0, 0, ARG0), (JSET_K, "deny", 0, CLONE_NAMESPACES), (RET_K, 0, 0, RET_ALLOW),
             "ioctl", (LD_W_ABS, 0, 0, ARG1), (JEQ_K, "deny", 0, TIOCSTI), (JEQ_K, "deny", 0, TIOCLINUX),
             (RET_K, 0, 0, RET_ALLOW),
             "socket", (LD_W_ABS, 0, 0, ARG0), *[(JEQ_K, "allow", 0, f) for f in SOCKET_FAMILIES],
             (RET_K, 0, 0, RET_ERRNO | errno.EAFNOSUPPORT),
             "personality", (LD_W_ABS, 0, 0, ARG0), *[(JEQ_K, "allow", 0, p) for p in PERSONALITY_ALLOWED],
             "deny", (RET_K, 0, 0, RET_ERRNO | errno.EPERM),
             "allow", (RET_K, 0, 0, RET_ALLOW),
             "enosys", (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]
    labels, pos = {}, 0
    for item in code:
        if isinstance(item, str):
            labels[item] = pos
        else:
            pos += 1
    out, pos = [], 0
    for item in code:
        if isinstance(item, str):
            continue
        op, jt, jf, k = item
        jump = [labels[j] - pos - 1 if isinstance(j, str) else j for j in (jt, jf)]
        out.append(struct.pack("=HBBI", op, jump[0], jump[1], k))
        pos += 1
    return b"".join(out)
