"""Helpers only the parallelism-and-kernels answers use (q13, q19, q20).
"""
