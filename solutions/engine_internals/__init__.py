"""Helpers only the engine-internals answers use (q21, q25, q28, q29, q55).
"""
