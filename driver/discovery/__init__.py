"""Reads a sysfs tree under a configurable root into an Inventory."""
