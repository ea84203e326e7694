"""End-to-end harness: drives MIG/vGPU scenarios locally (reference allocator as scheduler) or on kind."""
