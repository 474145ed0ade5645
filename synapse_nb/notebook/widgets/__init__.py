"""notebook/widgets layer."""
