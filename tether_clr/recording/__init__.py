"""Layer 5: what the pipeline records into: the tool log and the session log (``session``).
"""
