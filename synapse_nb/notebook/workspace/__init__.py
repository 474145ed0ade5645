"""The built-in `kernel__*` tool group: the agent looks at the notebook's variables, DataFrames and cells, and runs
code.
"""
