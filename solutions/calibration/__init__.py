"""Measured data and the fits on it: kernel profiles (A100, H100), published vLLM serving
runs, the least-squares fits that give the step model its fractions of peak, and the held-out
comparisons docs/fidelity.ipynb shows. The fitted constants themselves live in
`solutions.step_defaults`, so the step model never imports back from here.
"""
