"""Pure data model: dataclasses for discovered hardware and helpers for resource.k8s.io/v1 shapes.

Nothing in here performs I/O; every other layer builds on it.
"""
