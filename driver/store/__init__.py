"""Local object store: a directory of YAML objects standing in for the API server (docs/architecture.md §4)."""

from driver.store.objectstore import CLUSTER_SCOPE, ObjectStore

__all__ = ["CLUSTER_SCOPE", "ObjectStore"]
