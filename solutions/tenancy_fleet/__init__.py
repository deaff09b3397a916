"""Helpers only the tenancy-and-fleet answers use (q26, q30-q34).
"""
