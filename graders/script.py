"""Render a failing transcript as a short script the candidate can run next to their file."""

from __future__ import annotations

from graders.exercise import Exercise, Transcript, shown_steps

MAX_LINES = 40


def repro_script(exercise: Exercise, filename: str, transcript: Transcript, prop: str,
                 reason: str) -> str:
    shown = shown_steps(transcript.steps)
    var = exercise.class_name.lower()[:1] or "x"
    lines = [f"# minimal failing sequence for property {prop!r}",
             "import runpy",
             f"{exercise.class_name} = runpy.run_path({filename!r})[{exercise.class_name!r}]",
             ""]
    body = []
    for s in shown:
        args = ", ".join(repr(a) for a in s.args)
        if s.method is None:
            body.append(f"{var} = {exercise.class_name}({args})")
            continue
        call = f"{var}.{s.method}({args})"
        got = "?" if s.reply is None else s.reply.show()
        if got.startswith("raised"):   # keep the script running past an expected raise
            body.append(f"try: {call:<27} # {got}\nexcept Exception as exc: print(repr(exc))")
        else:
            body.append(f"{call:<32} # -> {got}")
    if len(body) > MAX_LINES:
        body = body[:1] + [f"# ... {len(body) - MAX_LINES + 1} calls omitted ..."] + \
            body[-(MAX_LINES - 2):]
    lines += body
    lines.append(f"# property {prop!r} fails here: {reason}")
    return "\n".join(lines)
