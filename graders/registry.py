"""Find exercises: every package under graders/exercises that defines EXERCISE."""

from __future__ import annotations

import importlib
import pkgutil

from graders import exercises
from graders.exercise import Exercise


def all_exercises() -> dict[str, Exercise]:
    found = {}
    for mod in pkgutil.iter_modules(exercises.__path__):
        module = importlib.import_module(f"{exercises.__name__}.{mod.name}")
        ex = getattr(module, "EXERCISE", None)
        if isinstance(ex, Exercise):
            found[ex.name] = ex
    return dict(sorted(found.items()))


def get(name: str) -> Exercise:
    exercises_ = all_exercises()
    if name not in exercises_:
        raise KeyError(f"no exercise named {name!r}; known: {', '.join(exercises_) or 'none'}")
    return exercises_[name]
