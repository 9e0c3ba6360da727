"""Private mean estimators."""
