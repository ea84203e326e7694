"""Reconciles the desired pool into a slice store and detects feature gates."""
