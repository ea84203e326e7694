"""The only importer of the kubernetes client: claim reader, raw slice store, gate probes."""
