"""Built-in GPU and NIC tables (YAML with cited sources); a package so they ship inside the wheel."""
