"""Layer 4: one call's stages and one batch's scheduling: ports (sinks, approval), listeners,
waterfalls, the pipeline, isolation, grouping, the worker pool, batches.
"""
