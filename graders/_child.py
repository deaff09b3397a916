"""The child side of the sandbox: load one submission, then answer calls over a pipe.

The parent runs this source with ``python -I -S -B -c`` (no site-packages, no project on
sys.path, no bytecode written), with resource limits; when the parent is root it drops to
a throwaway unprivileged uid before touching the submission. Everything this loop needs
is imported *before* the audit hook is installed. After that
the submission can import only the standard library and cannot start processes, signal
anyone, open sockets, load C code, walk frames, or open any file except the standard
library's own sources for reading. Audit hooks cannot be removed, and this one keeps its
policy in closure constants with no name left pointing at it.

Protocol: one JSON object per line, requests on fd REQ, replies on fd REP. Nothing here
decides a verdict: the parent checks every reply's shape, type and value.
"""

import builtins
import inspect
import json
import os
import sys
import traceback

REQ, REP, UID = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
# The interpreter may live where the sandbox uid cannot read (e.g. under /root), so the
# modules a small data-structure class may want are imported while we are still root.
PRELOAD = ("__future__", "abc", "array", "bisect", "collections", "collections.abc", "copy",
           "dataclasses", "enum", "functools", "heapq", "itertools", "math", "operator",
           "random", "re", "statistics", "string", "types", "typing", "weakref")
VIOLATIONS = []  # reported to the parent with every reply


class SandboxViolation(PermissionError):
    """Raised inside the submission when it tries something the sandbox forbids."""


def _make_hook(record):
    stdlib = tuple(os.path.realpath(p) + os.sep
                   for p in {sys.base_prefix, sys.base_exec_prefix})
    modules = frozenset(("solutions", "graders", "subprocess", "multiprocessing", "socket",
                         "_socket", "ssl", "ctypes", "_ctypes", "pty", "signal", "_signal",
                         "_posixsubprocess", "gc", "resource", "fcntl", "mmap", "asyncio"))
    events = ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
              "os.kill", "os.killpg", "os.setsid", "os.putenv", "os.unsetenv", "os.remove",
              "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
              "os.symlink", "os.truncate", "os.utime", "os.chdir", "os.mkfifo", "os.mknod",
              "os.setxattr", "os.removexattr", "subprocess.", "socket.", "ctypes.", "pty.",
              "shutil.", "sys._getframe", "sys._current_frames", "sys.setprofile",
              "sys.settrace", "resource.", "fcntl.", "mmap.",
              "gc.", "cpython.", "winreg.", "code.__new__")
    guarded = frozenset(("__code__", "__defaults__", "__kwdefaults__", "__globals__"))
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    realpath, fsdecode = os.path.realpath, os.fsdecode

    def refuse(what):
        record.append(what)
        raise SandboxViolation("forbidden in the grader sandbox: " + what)

    def hook(event, args):
        if event == "import":
            if str(args[0]).split(".")[0] in modules:
                refuse("import " + str(args[0]))
        elif event == "open":
            path, mode = args[0], args[1]
            flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
            writing = (type(mode) is str and any(c in mode for c in "wax+")) or bool(
                flags & write_flags)
            if type(path) is int:
                refuse("open of file descriptor %d" % path)
            real = realpath(fsdecode(path))
            if writing or not real.startswith(stdlib) or "-packages" in real:
                refuse("open %r (mode %r)" % (fsdecode(path), mode))
        elif event == "object.__getattr__":  # frames lead to the loop's globals
            if len(args) > 1 and (str(args[1]).endswith("frame") or args[1] == "f_back"):
                refuse("reading %s" % args[1])
        elif event in ("object.__setattr__", "object.__delattr__"):
            if len(args) > 1 and args[1] in guarded:
                refuse("setting %s" % args[1])
        elif event.startswith(events):
            refuse(event)

    return hook


def encode(value, depth=0):
    """Only exact builtin types cross: no subclasses, no objects with a custom __eq__."""
    t = type(value)
    if value is None or t in (bool, int, str):
        return value
    if t is float:
        return value if value == value and abs(value) != float("inf") else repr(value)
    if depth < 8 and t in (list, tuple):
        return [encode(v, depth + 1) for v in value]
    if depth < 8 and t is dict and all(type(k) is str for k in value):
        return {k: encode(v, depth + 1) for k, v in value.items()}
    raise TypeError("returned a %s, which is not plain data (None, bool, int, float, str, "
                    "list, tuple, dict)" % t.__name__)


def describe(exc):
    builtin = [k.__name__ for k in type(exc).__mro__ if getattr(builtins, k.__name__, None) is k]
    return {"raised": type(exc).__name__, "builtin": builtin, "message": str(exc)[:300]}


def invoke(obj, name, args):
    try:
        return {"ok": encode(getattr(obj, name)(*args))}
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        return {"fatal": "the submission raised %s (it tried to exit)" % type(exc).__name__}
    except RecursionError as exc:
        return {"fatal": "RecursionError: " + str(exc)[:200]}
    except BaseException as exc:  # the submission's own exception is its answer
        return describe(exc)


def load(msg):
    """Execute the submission's source; report which of the interface's members exist."""
    namespace = {"__name__": "submission", "__file__": msg["filename"],
                 "__builtins__": builtins}
    try:
        exec(compile(msg["source"], msg["filename"], "exec"), namespace)
    except SyntaxError as exc:
        return None, {"load_error": "syntax error: %s (line %s)" % (exc.msg, exc.lineno)}
    except (SystemExit, KeyboardInterrupt) as exc:
        return None, {"load_error": "the file raised %s while loading (it tried to exit)"
                      % type(exc).__name__}
    except BaseException as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return None, {"load_error": "loading the file raised " + last[:300]}
    cls = namespace.get(msg["class"])
    if not isinstance(cls, type):
        return None, {"load_error": "the file defines no class named %s" % msg["class"]}
    members = {}
    for name in msg["members"]:
        if inspect.getattr_static(cls, name, None) is None:
            continue
        try:
            params = inspect.signature(getattr(cls, name)).parameters.values()
            members[name] = [[p.name, p.kind.name, p.default is not p.empty] for p in params]
        except Exception:
            members[name] = None
    return cls, {"loaded": True, "members": members}


def send(message):
    message["violations"] = VIOLATIONS[:5]
    data = memoryview((json.dumps(message) + "\n").encode())
    while data:
        data = data[os.write(REP, data):]


def drop_privileges():
    """Become the throwaway uid the parent picked (only when the parent is root)."""
    for name in PRELOAD:
        __import__(name)
    if UID >= 0:
        os.setgroups([])
        os.setgid(UID)
        os.setuid(UID)


def serve():
    reader = os.fdopen(REQ, "rb")
    drop_privileges()
    sys.addaudithook(_make_hook(VIOLATIONS))
    cls, current = None, [None]
    while True:
        line = reader.readline()
        if not line:
            os._exit(0)
        msg = json.loads(line)
        if msg["op"] == "load":
            cls, reply = load(msg)
        elif msg["op"] == "new":
            reply = _construct(cls, msg["args"], current)
        else:  # "calls": a batch of method calls on the current instance
            reply = {"results": []}
            for name, args in msg["calls"]:
                result = invoke(current[0], name, args)
                reply["results"].append(result)
                if "fatal" in result:
                    break
        send(reply)


def _construct(cls, args, current):
    """Replace the current instance: one per hypothesis example."""
    current[0] = None
    try:
        current[0] = cls(*args)
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        return {"fatal": "the submission raised %s (it tried to exit)" % type(exc).__name__}
    except BaseException as exc:
        return describe(exc)
    return {"ok": None}


if __name__ == "__main__":
    serve()
