"""fake-dra: a Python DRA driver and kubelet plugin for simulated or real GPUs and SR-IOV NICs.

The package is layered (see pyproject's import-linter contracts): a pure core (model, features,
hardware, slices, allocator, celexpr) and I/O edges (discovery, kube, store, plugin, publish,
state) composed by the command line in driver.cli.
"""

DEFAULT_DRIVER_NAME = "fake-dra.example.com"
