"""Inventory + Features + driver config -> the node's desired ResourceSlice pool (pure)."""
