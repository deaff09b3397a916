"""The child side of the sandbox: load one submission, then answer calls over a pipe.

The parent runs this source with ``python -I -S -B -c`` (no site-packages, no project on
sys.path, no bytecode written), with resource limits; when the parent is root it drops to
a throwaway unprivileged uid before touching the submission. The interpreter may live where
that uid cannot read (e.g. under /root), so the standard library's directories are opened
first, while still root, and imports go through those open directories (/proc/self/fd/N):
the whole standard library imports, and nothing else does.

Then an audit hook is installed. From there on the submission can import only the standard
library and cannot start processes, signal anyone, open sockets, load C code, trace, or open
any file except the standard library's own sources, for reading, by an exact str or bytes
path. Audit hooks cannot be removed. This one is written to survive a submission that walks
frames into it: it keeps no mutable state, calls no Python code it was given (every argument
is checked by exact type first), and binds every builtin it uses at creation.

A refused operation is reported twice, so the report cannot be erased: at once, as a line on
the reply pipe, and as an irrevocable mark the parent reads from /proc (the hard limit of
RLIMIT_MSGQUEUE, which an unprivileged process can lower but never raise, drops to 0).

Protocol: one JSON object per line, requests on fd REQ, replies on fd REP. Nothing here
decides a verdict: the parent checks every reply's shape, type and value.
"""

import builtins
import inspect
import json
import linecache
import os
import resource
import sys
import traceback

REQ, REP, UID = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
FLAG = resource.RLIMIT_MSGQUEUE  # the parent sets it; at 0 a violation happened


class SandboxViolation(PermissionError):
    """Raised inside the submission when it tries something the sandbox forbids."""


def _make_hook(aliases, flag, setrlimit, write, rep, lstat, readlink, stat):
    """The audit hook. Everything it uses is bound here, as closure constants. `aliases`
    pairs each stdlib directory (real path, with a trailing /) with the /proc/self/fd path
    the throwaway uid reaches it by."""
    prefixes = tuple(real for real, _ in aliases)
    modules = frozenset(("solutions", "graders", "subprocess", "multiprocessing", "socket",
                         "_socket", "ssl", "_ssl", "ctypes", "_ctypes", "pty", "signal", "_signal",
                         "_posixsubprocess", "gc", "resource", "fcntl", "mmap", "asyncio",
                         "_testcapi", "_testinternalcapi", "_xxsubinterpreters", "faulthandler",
                         "_tracemalloc", "tracemalloc"))
    events = ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
              "os.kill", "os.killpg", "os.setsid", "os.putenv", "os.unsetenv", "os.remove",
              "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
              "os.symlink", "os.truncate", "os.utime", "os.chdir", "os.mkfifo", "os.mknod",
              "os.setxattr", "os.removexattr", "os.chflags", "os.lchflags", "subprocess.",
              "socket.", "ctypes.", "pty.", "shutil.", "sys._current_frames",
              "sys.setprofile", "sys.settrace", "resource.", "fcntl.", "mmap.", "gc.",
              "winreg.", "code.__new__", "signal.", "os.setpgid", "os.setuid",
              "os.setgid", "os.setreuid")
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    fsencoding = sys.getfilesystemencoding()
    str_, bytes_, int_, type_, len_, oserror = str, bytes, int, type, len, OSError
    violation = SandboxViolation
    link_bits, dir_bits = 0o120000, 0o040000

    def resolve(path, lstat, readlink, oserror, link_bits, aliases):
        """realpath without Python-level helpers: absolute `path` with symlinks resolved.
        Inside a stdlib directory it looks through the alias, as the kernel will."""
        todo = path.split("/")[::-1]
        done = []
        hops = 0
        while todo:
            name = todo.pop()
            if name == "" or name == ".":
                continue
            if name == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join(done + [name])
            probe = here
            for real, alias in aliases:
                if (here + "/").startswith(real) and len(here) >= len(real):
                    probe = alias + here[len(real) - 1:]
                    break
            try:
                mode = lstat(probe).st_mode
            except oserror:
                done.append(name)
                continue
            if mode & 0o170000 == link_bits:
                hops += 1
                if hops > 40:
                    return ""
                target = readlink(probe)
                if target.startswith("/"):
                    done = []
                todo.extend(target.split("/")[::-1])
            else:
                done.append(name)
        return "/" + "/".join(done)

    def hook(event, args):
        if event == "resource.setrlimit" and type_(args[0]) is int_ and args[0] == flag:
            return  # the mark refuse() leaves (lowering it is the only change possible)
        what = ""
        if event == "import":
            name = args[0]
            if type_(name) is not str_:
                what = "import of a module named by a non-str"
            elif name.split(".")[0] in modules:
                what = "import " + name
        elif event in ("open", "os.listdir", "os.scandir"):
            path = args[0]
            mode = args[1] if event == "open" else "r"
            flags = args[2] if len_(args) > 2 and type_(args[2]) is int_ else 0
            writing = (type_(mode) is str_ and ("w" in mode or "a" in mode or "x" in mode
                                                 or "+" in mode)) or (flags & write_flags) != 0
            if type_(path) is bytes_:
                path = path.decode(fsencoding, "surrogateescape")
            if type_(path) is int_:
                what = "%s of file descriptor %d" % (event, path)
            elif type_(path) is not str_:
                what = "%s of a path that is not a str or bytes" % event
            elif writing:
                what = "%s %r for writing (mode %r)" % (event, path, mode)
            elif not path.startswith("/"):
                what = "%s of the relative path %r" % (event, path)
            else:
                real = resolve(path, lstat, readlink, oserror, link_bits, aliases)
                if not (real + "/").startswith(prefixes) or "-packages" in real:
                    what = "%s %r (outside the standard library)" % (event, path)
                elif event == "open":
                    probe = real
                    for prefix, alias in aliases:
                        if (real + "/").startswith(prefix):
                            probe = alias + real[len(prefix) - 1:]
                            break
                    try:
                        if stat(probe).st_mode & 0o170000 == dir_bits:
                            what = "open of the directory %r" % path
                    except oserror:
                        pass
        elif event in ("object.__setattr__", "object.__delattr__"):
            if len_(args) > 1 and type_(args[1]) is str_ and args[1] == "__code__":
                what = "setting __code__"
        elif event.startswith(events):
            what = event
        if not what:
            return
        setrlimit(flag, (0, 0))
        line = ('{"violation": "%s"}\n' % what.encode("utf-8", "replace").hex()).encode()
        try:
            write(rep, line)
        except oserror:
            pass
        raise violation("forbidden in the grader sandbox: " + what)

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
    """Call one method. When an argument is a list or dict (the caller's data), the reply
    also carries the arguments as they are after the call, so the grader can see a method
    that changed what it was given (a JSON copy is all it sent)."""
    mutable = any(type(a) in (list, dict) for a in args)
    try:
        value = getattr(obj, name)(*args)
        if not mutable:
            return {"ok": encode(value)}
        try:
            after = encode(args)
        except TypeError:
            after = "not plain data"
        return {"ok": encode(value), "args": after}
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
    sys.modules["submission"] = type(sys)("submission")  # dataclasses and pickle look it up
    sys.modules["submission"].__dict__.update(namespace)
    namespace = sys.modules["submission"].__dict__
    # tracebacks read the source from here, never from the file (which may not be readable)
    linecache.cache[msg["filename"]] = (len(msg["source"]), None,
                                        msg["source"].splitlines(True), msg["filename"])
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
    data = memoryview((json.dumps(message) + "\n").encode())
    while data:
        data = data[os.write(REP, data):]


def open_stdlib():
    """Open the standard library's directories while we can still read them: imports then
    go through /proc/self/fd/N, which needs no permission on the directories above."""
    found = []
    for entry in sys.path:
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        found.append((fd, os.path.realpath(entry) + os.sep))
    return found


def drop_privileges():
    """Become the throwaway uid the parent picked (only when the parent is root)."""
    if UID >= 0:
        os.setgroups([])
        os.setgid(UID)
        os.setuid(UID)


def serve():
    reader = os.fdopen(REQ, "rb")
    stdlib = open_stdlib()
    drop_privileges()
    sys.path[:] = ["/proc/self/fd/%d" % fd for fd, _ in stdlib]
    sys.path_importer_cache.clear()
    for module in list(sys.modules.values()):  # packages imported so far: importlib, json...
        search = getattr(module, "__path__", None)
        if type(search) is list:
            for i, entry in enumerate(search):
                for (fd, real), path in zip(stdlib, sys.path):
                    if (entry + os.sep).startswith(real):
                        search[i] = path + entry[len(real) - 1:]
                        break
    import posix
    aliases = tuple((real, path) for (_, real), path in zip(stdlib, sys.path))
    hook = _make_hook(aliases, FLAG, resource.setrlimit, posix.write, REP, posix.lstat,
                      posix.readlink, posix.stat)
    del sys.modules["resource"]  # imported again only through the hook, which refuses it
    sys.addaudithook(hook)
    del hook
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
