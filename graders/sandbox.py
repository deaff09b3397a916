"""Run an untrusted submission in a child process and talk to it over a pipe.

The parent never imports the submission. The child (``graders/_child.py``) gets an empty
environment, a private scratch directory, limits on CPU time, address space, processes,
file size and open files, a throwaway uid and a fresh network namespace when we run as
root, and its own process group. Every reply is size-capped, parsed as JSON and checked
for shape here; anything odd (a hang, a death, an exit, a forged or oversized message)
ends the run with a :class:`SandboxFatal` naming what happened.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHILD_SOURCE = (Path(__file__).with_name("_child.py")).read_text()
MAX_MESSAGE = 1 << 20          # bytes in one reply line
OUTPUT_SHOWN = 2000            # characters of candidate stdout/stderr kept in reports
CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class Limits:
    """Resource limits for one child. Generous for a 40-line class, fatal for abuse."""
    call_timeout_s: float = 2.0      # wall clock for one request
    run_timeout_s: float = 60.0      # wall clock for the whole check
    cpu_s: int = 30                  # RLIMIT_CPU
    address_space: int = 512 << 20   # RLIMIT_AS, bytes
    file_size: int = 1 << 20         # RLIMIT_FSIZE: caps captured stdout/stderr too
    processes: int = 8               # RLIMIT_NPROC for the sandbox uid
    open_files: int = 32             # RLIMIT_NOFILE


class SandboxFatal(BaseException):
    """The child hung, died, exited, or broke protocol. Ends the run; never a pass.

    A BaseException so hypothesis does not treat it as a shrinkable test failure."""


@dataclass
class Reply:
    """One call's outcome: a plain-data value, or the exception the submission raised."""
    value: object = None
    raised: str | None = None          # the exception class name
    builtin: tuple[str, ...] = ()      # builtin exception classes in its MRO
    message: str = ""

    def raised_builtin(self, name: str) -> bool:
        return self.raised is not None and name in self.builtin

    def show(self) -> str:
        if self.raised is None:
            return repr(self.value)
        return f"raised {self.raised}" + (f"({self.message!r})" if self.message else "")


def _sandbox_uid() -> int | None:
    """A uid nobody else uses, so RLIMIT_NPROC and the final sweep are ours alone."""
    if os.geteuid() != 0:
        return None
    return 200_000 + random.SystemRandom().randrange(1 << 20)


def _preexec(limits: Limits, uid: int | None):
    def setup():  # runs in the forked child before exec
        os.setsid()
        if uid is not None:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.unshare(CLONE_NEWNET)  # best effort: no network where the kernel allows
        for lim, value in ((resource.RLIMIT_CPU, limits.cpu_s),
                           (resource.RLIMIT_AS, limits.address_space),
                           (resource.RLIMIT_FSIZE, limits.file_size),
                           (resource.RLIMIT_NOFILE, limits.open_files),
                           (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(lim, (value, value))
        if uid is not None:  # counted against the uid the child switches to
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    return setup


@dataclass
class Sandbox:
    """One child process hosting one submission. Use as a context manager."""
    source: str
    filename: str
    limits: Limits = field(default_factory=Limits)
    calls: int = 0

    def __post_init__(self):
        self._proc = None
        self._fatal: str | None = None
        self._deadline = time.monotonic() + self.limits.run_timeout_s
        self.violations: list[str] = []

    # lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        self._uid = _sandbox_uid()
        self._dir = tempfile.mkdtemp(prefix="grader-")
        self._out_path = os.path.join(self._dir, "output.txt")
        scratch = os.path.join(self._dir, "scratch")
        os.mkdir(scratch, 0o700)
        if self._uid is not None:
            os.chown(scratch, self._uid, self._uid)
        req_r, self._req_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        out = open(self._out_path, "wb")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-B", "-u", "-c", CHILD_SOURCE, str(req_r), str(rep_w),
                 str(-1 if self._uid is None else self._uid)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, env={}, cwd=scratch,
                pass_fds=(req_r, rep_w), preexec_fn=_preexec(self.limits, self._uid),
                close_fds=True)
        finally:
            out.close()
            os.close(req_r)
            os.close(rep_w)
        self._buffer = b""

    def close(self) -> None:
        """Kill the child's process group and anything left running under its uid."""
        if self._proc is not None:
            for fd in (self._req_w, self._rep_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._proc.wait()
            if self._uid is not None:
                _kill_uid(self._uid)
            self._proc = None
        if getattr(self, "_dir", None):
            self._kept_output = self.output()
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def restart(self) -> None:
        self.close()
        self.start()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def output(self) -> str:
        """The candidate's stdout and stderr so far, truncated."""
        if not getattr(self, "_dir", None):
            return getattr(self, "_kept_output", "")
        try:
            with open(self._out_path, "rb") as f:
                data = f.read(OUTPUT_SHOWN + 1).decode("utf-8", "replace")
        except (OSError, AttributeError, TypeError):
            return ""
        return data if len(data) <= OUTPUT_SHOWN else data[:OUTPUT_SHOWN] + "\n[... truncated]"

    # protocol ----------------------------------------------------------------
    def load(self, class_name: str, members: list[str]) -> dict:
        reply = self._request({"op": "load", "source": self.source, "filename": self.filename,
                               "class": class_name, "members": members})
        if "load_error" in reply and isinstance(reply["load_error"], str):
            return {"error": reply["load_error"][:400]}
        if reply.get("loaded") is True and isinstance(reply.get("members"), dict):
            return {"members": reply["members"]}
        self._die("the child sent a malformed reply to load")

    def new(self, args: list) -> Reply:
        return self._outcome(self._request({"op": "new", "args": args}), "constructor")

    def call_many(self, calls: list[tuple[str, list]]) -> list[Reply]:
        reply = self._request({"op": "calls", "calls": calls})
        results = reply.get("results")
        if not isinstance(results, list) or not 0 < len(results) <= len(calls):
            self._die("the child sent a malformed reply")
        outs = [self._outcome(r, name) for r, (name, _) in zip(results, calls)]
        if len(outs) < len(calls):
            self._die("the child answered fewer calls than it was sent")
        return outs

    def call(self, name: str, *args) -> Reply:
        return self.call_many([(name, list(args))])[0]

    def _outcome(self, r, what: str) -> Reply:
        if not isinstance(r, dict):
            self._die("the child sent a malformed reply")
        if isinstance(r.get("fatal"), str):
            self._die(f"{what}: {r['fatal'][:300]}")
        if "ok" in r and len(r) == 1:
            return Reply(value=r["ok"])
        if (isinstance(r.get("raised"), str) and isinstance(r.get("builtin"), list)
                and all(isinstance(b, str) for b in r["builtin"])
                and isinstance(r.get("message"), str)):
            return Reply(raised=r["raised"][:80], builtin=tuple(r["builtin"]),
                         message=r["message"][:300])
        self._die("the child sent a malformed reply")

    def _request(self, message: dict) -> dict:
        if self._fatal:
            raise SandboxFatal(self._fatal)
        self.calls += 1
        try:
            os.write(self._req_w, (json.dumps(message) + "\n").encode())
        except (BrokenPipeError, OSError):
            self._die(self._death("before it was sent a call"))
        line = self._read_line()
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            self._die("the child sent a reply that is not JSON")
        if not isinstance(reply, dict):
            self._die("the child sent a malformed reply")
        v = reply.pop("violations", [])
        if isinstance(v, list):
            self.violations.extend(str(x)[:200] for x in v[:5] if str(x) not in self.violations)
        return reply

    def _read_line(self) -> bytes:
        call_deadline = time.monotonic() + self.limits.call_timeout_s
        while b"\n" not in self._buffer:
            now = time.monotonic()
            if now > self._deadline:
                self._die(f"the whole check exceeded {self.limits.run_timeout_s:g} s")
            wait = min(call_deadline, self._deadline) - now
            if wait <= 0:
                self._die(f"a call took longer than {self.limits.call_timeout_s:g} s "
                          "(an infinite loop, or a hang)")
            ready, _, _ = select.select([self._rep_r], [], [], wait)
            if not ready:
                continue
            chunk = os.read(self._rep_r, 65536)
            if not chunk:
                self._die(self._death("during a call"))
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE:
                self._die("the child sent an oversized reply")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _death(self, when: str) -> str:
        try:
            code = self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return f"the child closed the pipe {when}"
        if code < 0:
            name = signal.Signals(-code).name
            why = {"SIGXCPU": " (CPU time limit)", "SIGXFSZ": " (file size limit: too much "
                   "output)", "SIGKILL": " (killed, likely the memory limit)"}.get(name, "")
            return f"the child was killed by {name}{why} {when}"
        return f"the child exited with status {code} {when} (os._exit or a crash)"

    def _die(self, reason: str):
        self._fatal = reason
        self.close()
        raise SandboxFatal(reason)


def _kill_uid(uid: int) -> None:
    """Sweep: SIGKILL every process still running as the sandbox's private uid."""
    for _ in range(3):
        found = False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/status") as f:
                    uids = next(l for l in f if l.startswith("Uid:")).split()[1:]
            except (OSError, StopIteration):
                continue
            if str(uid) in uids:
                found = True
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return
        time.sleep(0.05)
