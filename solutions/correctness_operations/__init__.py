"""Helpers only the correctness-and-operations answers use (q14, q39, q40, q42).
"""
