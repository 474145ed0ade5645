"""history layer."""
