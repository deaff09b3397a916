"""Helpers only the decoding answers use (q15-q18, q27): grammars, automata, drafters.
"""
