"""One package per exercise; each defines EXERCISE (see graders.exercise)."""
