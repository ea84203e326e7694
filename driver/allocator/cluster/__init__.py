"""The cluster view the reference allocator is built from (see view.py for the contract).

Public API: `ClusterView` (objects in, per-node `Allocator` out, incremental updates, per-pool
usage), `claim_key`, and the usage model of usage.py (`Usage`, `PoolUsage`, `CounterUse`, `Hold`),
which driver.allocator.usage re-exports.
"""

from driver.allocator.cluster.accounts import Hold
from driver.allocator.cluster.fleet import FilterOutcome, filter_nodes
from driver.allocator.cluster.usage import CounterUse, PoolUsage, Usage
from driver.allocator.cluster.view import KINDS, ClusterView, NodeEntry, claim_key

__all__ = ["KINDS", "ClusterView", "CounterUse", "FilterOutcome", "Hold", "NodeEntry", "PoolUsage", "Usage",
           "claim_key", "filter_nodes"]
