"""notebook/commands layer."""
