"""Helpers only the roofline-and-capacity answers use (q01-q03, q08, q12, q35, q53).
"""
