"""pypto-sched."""
