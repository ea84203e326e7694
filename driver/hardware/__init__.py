"""GPU and NIC model tables with their public sources, plus config-file overrides."""
