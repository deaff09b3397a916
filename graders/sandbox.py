"""Run an untrusted submission in a child process and talk to it over a pipe.

The parent never imports the submission. The child (``graders/_child.py``) gets an empty
environment, a private scratch directory, limits on CPU time, address space, processes,
file size and open files, a throwaway uid and a fresh network namespace when we run as
root, and its own process group. Every reply is size-capped, parsed as JSON and checked
for shape here; anything odd (a hang, a death, an exit, a forged or oversized message)
ends the run with a :class:`SandboxFatal` naming what happened.

Time is counted in the child's CPU seconds (read from /proc), not on the wall clock, so a
busy machine cannot make correct code look slow: a call that burns `call_cpu_s` is an
infinite loop (the code's fault), a call blocked without using CPU for `hang_s` is a hang
(the code's fault), and a property whose examples burn `property_cpu_s`, or a call still
waiting for the CPU after `call_wall_s`, is a limit (:class:`SandboxLimit`): the verdict
then says "not checked (limit)", never that the code failed.
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
    call_cpu_s: float = 1.0          # child CPU for one request: more is an infinite loop
    hang_s: float = 2.0              # wall time blocked with no CPU used: a hang (sleep, wait)
    call_wall_s: float = 120.0       # backstop for one request on a starved machine: a limit
    property_cpu_s: float = 60.0     # child CPU for one property's examples: a limit
    cpu_s: int = 900                 # RLIMIT_CPU over the child's life (a backstop)
    address_space: int = 512 << 20   # RLIMIT_AS, bytes
    file_size: int = 1 << 20         # RLIMIT_FSIZE: caps captured stdout/stderr too
    processes: int = 16              # RLIMIT_NPROC for the sandbox uid (threads count)
    open_files: int = 32             # RLIMIT_NOFILE


class SandboxFatal(BaseException):
    """The child hung, died, exited, or broke protocol. Ends the run; never a pass.

    A BaseException so hypothesis does not treat it as a shrinkable test failure."""


class SandboxLimit(SandboxFatal):
    """A limit, not the code, ended the run (a starved machine, a spent CPU budget)."""


# The violation mark: the child inherits our RLIMIT_MSGQUEUE hard limit and lowers it to 0
# when it breaks a rule (where it is already 0 here, only the pipe reports remain).
def _violation_mark() -> str | None:
    """Our RLIMIT_MSGQUEUE hard limit as /proc prints it; None where the platform has no
    rlimits (Pyodide, where the site's in-browser Check runs the child's code in process)."""
    try:
        hard = resource.getrlimit(resource.RLIMIT_MSGQUEUE)[1]
    except (AttributeError, OSError, ValueError):
        return None
    return "unlimited" if hard == resource.RLIM_INFINITY else str(hard)


VIOLATION_MARK = _violation_mark()
try:
    TICK = os.sysconf("SC_CLK_TCK")  # /proc CPU times are in clock ticks
except (AttributeError, OSError, ValueError):
    TICK = 100


class ExactFloat(float):
    """A float the child returned: equal to floats only (3.0 is not the int 3)."""
    __slots__ = ()

    def __eq__(self, other):
        return type(other) in (float, ExactFloat) and float(self) == float(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = float.__hash__

    def __repr__(self):
        return float.__repr__(self)


class ExactBool:
    """A bool the child returned: equal to bools only (True is not the int 1)."""
    __slots__ = ("value",)

    def __init__(self, value: bool):
        self.value = value

    def __eq__(self, other):
        return (type(other) is bool and other is self.value) or (
            type(other) is ExactBool and other.value is self.value)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.value)

    def __bool__(self):
        return self.value

    def __repr__(self):
        return repr(self.value)


_DECODER = json.JSONDecoder(parse_float=ExactFloat)  # one decoder: json.loads(kw) builds one per call


def _exact(value):
    """JSON values with bools made exact (floats are ExactFloat already, see _request)."""
    t = type(value)
    if t is int or value is None:
        return value
    if t is bool:
        return ExactBool(value)
    if t is list:
        return [_exact(v) for v in value]
    if t is dict:
        return {k: _exact(v) for k, v in value.items()}
    return value


@dataclass
class Reply:
    """One call's outcome: a plain-data value, or the exception the submission raised."""
    value: object = None
    raised: str | None = None          # the exception class name
    builtin: tuple[str, ...] = ()      # builtin exception classes in its MRO
    message: str = ""
    after: object = None               # list/dict arguments as they were after the call

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
        self.violations: list[str] = []
        self._budget_from = 0.0      # child CPU seconds when the current property began
        self._budget_checked = 0.0   # monotonic time of the last budget check

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
        self._budget_from = 0.0
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
            self._read_mark()
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
        self._fatal = None
        self.start()

    def final_violations(self) -> list[str]:
        """Every forbidden operation reported, including one whose report was suppressed."""
        self._read_mark()
        return list(self.violations)

    def _read_mark(self) -> None:
        """The child lowers its RLIMIT_MSGQUEUE hard limit to 0 at a violation; nothing it
        can do raises it again, so a suppressed pipe report still shows here."""
        if self._proc is None or VIOLATION_MARK in ("0", None):
            return
        try:
            with open(f"/proc/{self._proc.pid}/limits") as f:
                line = next(l for l in f if l.startswith("Max msgqueue size"))
            hard = line.split()[4]
        except (OSError, StopIteration, IndexError):
            return
        if hard != VIOLATION_MARK and not self.violations:
            self.violations.append("a forbidden operation whose report was suppressed")

    # time --------------------------------------------------------------------
    def _cpu_and_state(self) -> tuple[float, str]:
        """The child's CPU seconds (all threads) and scheduler state (R runnable, S, D, ...)."""
        try:
            with open(f"/proc/{self._proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError, AttributeError):
            return 0.0, "?"
        return (int(fields[11]) + int(fields[12])) / TICK, fields[0].decode()

    def begin_budget(self) -> None:
        """A property's run starts: its CPU budget counts from here."""
        if self._proc is not None:
            self._budget_from = self._cpu_and_state()[0]
            self._budget_checked = time.monotonic()

    def _check_budget(self) -> None:
        now = time.monotonic()
        if now - self._budget_checked < 0.25:
            return
        self._budget_checked = now
        used = self._cpu_and_state()[0] - self._budget_from
        if used > self.limits.property_cpu_s:
            self._die(f"this property's examples used {used:.0f} s of the submission's CPU "
                      f"(budget {self.limits.property_cpu_s:g} s): slow code or a slow machine",
                      limit=True)

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
            return Reply(value=_exact(r["ok"]))
        if "ok" in r and "args" in r and len(r) == 2:
            return Reply(value=_exact(r["ok"]), after=_exact(r["args"]))
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
        while True:
            line = self._read_line()
            try:
                reply = _DECODER.decode(line.decode("utf-8"))
            except (ValueError, RecursionError):
                self._die("the child sent a reply that is not JSON")
            if not isinstance(reply, dict):
                self._die("the child sent a malformed reply")
            if set(reply) != {"violation"}:
                break
            self._violation(reply["violation"])
        self._check_budget()
        return reply

    def _violation(self, coded) -> None:
        """A line the audit hook wrote the moment it refused something."""
        try:
            what = bytes.fromhex(coded).decode("utf-8", "replace")[:200]
        except (TypeError, ValueError):
            what = "a forbidden operation (garbled report)"
        if what not in self.violations and len(self.violations) < 5:
            self.violations.append(what)

    def _read_line(self) -> bytes:
        """The next line from the child. Fast calls return at once; a slow one is watched in
        the child's CPU time: an infinite loop and a hang are the code's doing, a call that
        is still runnable but starved of CPU past the wall backstop is a limit."""
        start = time.monotonic()
        cpu0 = last_cpu = None
        blocked_since = None
        poll = 0.01
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._rep_r], [], [], poll)
            if ready:
                chunk = os.read(self._rep_r, 65536)
                if not chunk:
                    why = self._death("during a call")
                    self._die(why, limit="SIGXCPU" in why)
                self._buffer += chunk
                if len(self._buffer) > MAX_MESSAGE:
                    self._die("the child sent an oversized reply")
                continue
            poll = min(poll * 2, 0.1)
            now = time.monotonic()
            cpu, state = self._cpu_and_state()
            if cpu0 is None:
                cpu0 = last_cpu = cpu
            if cpu - cpu0 > self.limits.call_cpu_s:
                self._die(f"a call used more than {self.limits.call_cpu_s:g} s of CPU (an "
                          "infinite loop, or far too much work)")
            if state != "R" and cpu == last_cpu:
                blocked_since = blocked_since or now
                if now - blocked_since > self.limits.hang_s:
                    self._die(f"a call blocked for more than {self.limits.hang_s:g} s without "
                              "using CPU (a sleep, or a wait that never ends)")
            else:
                blocked_since = None
            last_cpu = cpu
            if now - start > self.limits.call_wall_s:
                self._die(f"a call was still waiting for the CPU after "
                          f"{self.limits.call_wall_s:g} s on the wall clock (a busy machine: "
                          "rerun on a quieter one)", limit=True)
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _death(self, when: str) -> str:
        try:
            code = self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return f"the child closed the pipe {when}"
        if code < 0:
            name = signal.Signals(-code).name
            why = {"SIGXCPU": " (its lifetime CPU limit)", "SIGXFSZ": " (file size limit: too "
                   "much output)", "SIGKILL": " (killed, likely the memory limit)"}.get(name, "")
            return f"the child was killed by {name}{why} {when}"
        return f"the child exited with status {code} {when} (os._exit or a crash)"

    def _die(self, reason: str, limit: bool = False):
        self._fatal = reason
        self.close()
        raise (SandboxLimit if limit else SandboxFatal)(reason)


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
