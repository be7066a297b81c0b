"""pypto-run."""
