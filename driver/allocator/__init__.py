"""Reference structured allocator (pure): predicts what kube-scheduler allocates."""
