"""Where one kernel's events go: the router (history, panels, running calls), record/replay tapes, tracing."""
