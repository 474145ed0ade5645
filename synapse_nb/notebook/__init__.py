"""notebook layer."""
