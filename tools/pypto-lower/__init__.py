"""pypto-lower."""
