"""One `%%synapse` turn in the cell: what it knows (view), how it shows (display, render), what it leaves (result,
DataFrames).
"""
