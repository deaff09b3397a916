"""The graders package, unchanged, in one Pyodide interpreter: the Web Worker is the sandbox.

`grader check` runs a submission in a child process and talks to it over a pipe. A browser has
no processes, so this replaces the runner's Sandbox with one whose requests are answered here,
by the child's own functions (graders/_child.py, executed as a module, its loop not started);
every message still round-trips through JSON, so only plain data crosses, as over the pipe.
The page puts a time limit on the worker and terminates it. Modules Pyodide lacks (resource,
ctypes...) are only used to start a child process, so empty stand-ins let the graders import.
"""

import contextlib
import io
import json
import sys
import types

for _name in ("ctypes", "resource", "select", "subprocess", "fcntl"):
    try:
        __import__(_name)
    except ImportError:
        sys.modules[_name] = types.ModuleType(_name)
# Pyodide's `resource` has no rlimits; the child only names them to set limits on a process
# this worker does not have, so inert stand-ins are enough.
_resource = sys.modules["resource"]
for _attr, _value in (("RLIMIT_MSGQUEUE", 12), ("RLIM_INFINITY", -1),
                      ("getrlimit", lambda _which: (-1, -1)), ("setrlimit", lambda *_args: None)):
    if not hasattr(_resource, _attr):
        setattr(_resource, _attr, _value)

from graders import registry, report, runner, sandbox  # noqa: E402

_child = {"__name__": "grader_child"}
_argv, sys.argv = sys.argv, ["child", "0", "0", "-1"]  # the child reads its pipe fds at import
exec(compile(sandbox.CHILD_SOURCE, "_child.py", "exec"), _child)
sys.argv = _argv


class WorkerSandbox(sandbox.Sandbox):
    def start(self):
        self._cls, self._current, self._out = None, [None], io.StringIO()

    def close(self):
        pass

    def output(self):
        data = self._out.getvalue() if hasattr(self, "_out") else ""
        shown = sandbox.OUTPUT_SHOWN
        return data if len(data) <= shown else data[:shown] + "\n[... truncated]"

    def _request(self, message):
        if self._fatal:
            raise sandbox.SandboxFatal(self._fatal)
        self.calls += 1
        msg = json.loads(json.dumps(message))
        with contextlib.redirect_stdout(self._out), contextlib.redirect_stderr(self._out):
            if msg["op"] == "load":
                self._cls, reply = _child["load"](msg)
            elif msg["op"] == "new":
                reply = _child["_construct"](self._cls, msg["args"], self._current)
            else:
                reply = {"results": []}
                for name, args in msg["calls"]:
                    result = _child["invoke"](self._current[0], name, args)
                    reply["results"].append(result)
                    if "fatal" in result:
                        break
        try:
            return json.loads(json.dumps(reply))
        except (TypeError, ValueError):
            self._die("the submission returned something that is not plain data")


runner.Sandbox = WorkerSandbox


def check(exercise: str, source: str, filename: str):
    """What `grader check EXERCISE FILE` prints, and its exit status."""
    verdict = runner.grade(registry.get(exercise), source, filename)
    return report.text(verdict), verdict.exit_status
