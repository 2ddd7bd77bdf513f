"""A package the capture tests' program imports its model from (by package name)."""
