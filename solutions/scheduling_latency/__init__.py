"""Helpers only the scheduling-and-latency answers use (q10, q11, q48-q54).
"""
