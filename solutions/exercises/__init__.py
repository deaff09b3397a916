"""Reference solutions of the five graded coding exercises (q43-q47): what `graders/` imports
and grades, and what each mutant in the catalogue is a diff against.
"""
