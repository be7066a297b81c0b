"""pypto-emit."""
