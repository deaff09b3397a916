"""Helpers only the KV-cache-memory answers use (q04, q06, q07, q09, q22, q37, q38, q41).
"""
