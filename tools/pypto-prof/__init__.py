"""pypto-prof."""
