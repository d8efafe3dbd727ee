"""Layer 2: the Tool protocol, registration predicates, and PythonFunction.
"""
