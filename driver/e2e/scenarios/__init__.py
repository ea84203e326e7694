"""Bundled e2e scenarios (YAML data files, one scenario each); a package so they ship as package data."""
