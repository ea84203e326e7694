"""The only importer of the CEL library: DRA CEL environment and compile cache."""
