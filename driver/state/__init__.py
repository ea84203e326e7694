"""Prepare/unprepare: preparation-time revalidation, CDI specs and the crash-safe checkpoint (no grpc/kubernetes).

Public API:
- `driver.state.prepare.DeviceState(driver_name=, claims=ClaimSource, pool=PoolCache, cdi=CdiWriter,
  checkpoint=CheckpointStore, crash_hook=, metadata=DeviceMetadataWriter, claim_status=ClaimStatusReporter,
  max_call_s=45, when_owned=)`: `prepare([ClaimRef], timeout_s=None) -> {uid: PrepareResult}`,
  `unprepare([ClaimRef], timeout_s=None) -> {uid: error}`, `prepared() -> {uid: ClaimEntry}`,
  `shutdown(grace_s, cancel_s) -> bool`, `close()`.
- `driver.state.ownership`: the state-directory lock, the in-flight call gate (drain, cancel) and
  start-up I/O errors; `driver.deadline.Deadline` bounds every call.
- `driver.state.types`: ClaimRef, ClaimSource (Protocol), PoolView, PreparedDevice, PrepareResult,
  DeviceHealthStatus. `driver.state.sources.StoreClaimSource(ObjectStore)`.
- `driver.state.health.HealthModel(sysfs_root, devices, driver_name).snapshot()`, `fault_path`, `read_fault`.
- `driver.state.cdi.CdiWriter`, `driver.state.checkpoint.CheckpointStore`, `read_boot_id`,
  `driver.state.config.parse_opaque` (GpuConfig/VfConfig), `driver.state.pool.PoolCache`.
- `driver.state.metadata.DeviceMetadataWriter` (KEP-5304 device metadata files + CDI mounts),
  `driver.state.claimstatus.ClaimStatusReporter(DeviceStatusSink)` (VF status.devices),
  `driver.state.netinfo.sysfs_network_data` (interface name + MAC at prepare time).
"""
