"""pypto-trace."""
