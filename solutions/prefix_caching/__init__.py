"""Helpers only the prefix-caching answers use (q05, q23, q24, q36).
"""
