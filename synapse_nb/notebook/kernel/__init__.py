"""The kernel's side of the notebook: the I/O port (ipykernel's internals), stoppable stdin reads, the runner and
awaited cells.
"""
