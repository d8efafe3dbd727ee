"""Layer 1: text, canonical JSON, JSON values, argument parsing and limits, JSON Schema checks,
compatibility, versions, cancellation, errors. No records, no catalog.
"""
