"""Tests of driver.hardware (tables, loader, overrides)."""
