"""Layer 2: the immutable records that flow through the pipeline: scope, request context,
decisions, calls and outcomes, declarations, suspension, audit.
"""
