"""The cluster view the reference allocator is built from (see view.py for the contract).

Public API: `ClusterView` (objects in, per-node `Allocator` out, incremental updates, per-pool
usage), `claim_key`, and the usage records of usage.py.
"""

from driver.allocator.cluster.accounts import HeldResult
from driver.allocator.cluster.fleet import FilterOutcome, filter_nodes
from driver.allocator.cluster.usage import CounterUsage, Holder, PoolUsage
from driver.allocator.cluster.view import KINDS, ClusterView, NodeEntry, claim_key

__all__ = ["KINDS", "ClusterView", "CounterUsage", "FilterOutcome", "HeldResult", "Holder", "NodeEntry", "PoolUsage",
           "claim_key", "filter_nodes"]
