"""The answer kit: hardware, models, roofline and claims every notebook computes with.

One constant, one place, one source: a notebook imports a figure from here instead of
typing it, so a correction lands in every answer at once.
"""
