"""One SR-IOV NIC physical function -> a bandwidth counter set and one device per VF.

The PF's link speed is the budget (`nic-N-counters`, counter `bandwidth`, bit/s). Each VF
(`nic-N-vf-K`, type `vf`) draws from it:

- DRASharedConsumableCapacity on (KEP-5941, newest shape): `valueFrom: {capacityName:
  "<driver>/bandwidth"}` — the amount the claim puts in `capacity.requests`. The VF's own capacity
  key is the unqualified `bandwidth`; unqualified names carry the driver's domain, so a claim may
  write `bandwidth` or `<driver>/bandwidth` and both name the same capacity. The counter carries a
  `requestPolicy` (default = the equal share rounded down to the step, validRange min = step,
  max = link speed rounded down to a step, step = `slices.bandwidthStep`, default 100M).
- off: a static equal share, link speed / number of VFs published (numvfs, not totalvfs: every
  enabled VF can be handed out at once and the whole link stays usable).

A PF without VFs enabled, or without SR-IOV, is the host's own port (storage, management network): it
is not published unless the driver config names it in `slices.publishPFs` (PCI address or interface),
and then as a whole NIC (`nic-N`, type `nic`, DeviceClass `nic`). A PF whose link speed is unknown
(link down) still publishes its VFs, without bandwidth accounting, and a warning.
VFs declare no compatibility groups: they are all alike and only bandwidth limits them.
"""

from __future__ import annotations

from driver.model.inventory import NicPF
from driver.slices.common import Rendered, RenderContext, consumption, device, i, location_attributes, s
from driver.slices.names import mbps_quantity


def counter_set_name(nic_index: int) -> str:
    return f"nic-{nic_index}-counters"


def static_share_mbps(nic: NicPF) -> int:
    """Equal per-VF share of the link when valueFrom is not available."""
    if not nic.speed_mbps or not nic.vfs:
        return 0
    return nic.speed_mbps // len(nic.vfs)


def render_nic(nic: NicPF, ctx: RenderContext) -> Rendered:
    out = Rendered()
    prefix = f"nic-{nic.index}"
    pf_uuid = ctx.uuid(nic.pci.address, prefix)
    common = {"productName": s(nic.product_name or "SR-IOV NIC")}
    features = ctx.features
    speed = nic.speed_mbps if nic.speed_mbps and nic.speed_mbps > 0 else None

    opted_in = ctx.config.publishes_pf(nic.pci.address, nic.interface)
    if not nic.vfs:
        if opted_in:
            attrs = {**common, **location_attributes(nic.pci), "type": s("nic"), "uuid": s(pf_uuid),
                     "totalVFs": i(nic.total_vfs)}
            if nic.interface:
                attrs["interface"] = s(nic.interface)
            capacity = {"bandwidth": {"value": mbps_quantity(speed)}} if speed else None
            out.devices.append(device(prefix, attrs, capacity))
        return out
    if opted_in:
        out.warnings.append(f"{prefix} ({nic.pci.address}): named in slices.publishPFs but has {len(nic.vfs)} VFs "
                            "enabled; its VFs are published, not the PF")

    if speed is None:
        out.warnings.append(f"{prefix} ({nic.pci.address}): link speed unknown (link down?); "
                            "its VFs are published without bandwidth accounting")
    use_counters = features.partitionable_devices and speed is not None
    value_from = use_counters and features.shared_consumable_capacity
    cs = counter_set_name(nic.index)
    share = static_share_mbps(nic)
    if use_counters:
        bandwidth: dict = {"value": mbps_quantity(speed)}
        if value_from:
            step = ctx.config.bandwidth_step_mbps
            if speed >= 2 * step:  # validRange needs min + step <= the counter value
                default = max(step, (share // step) * step)
                top = (speed // step) * step
                bandwidth["requestPolicy"] = {
                    "default": mbps_quantity(default),
                    "validRange": {"min": mbps_quantity(step), "max": mbps_quantity(top),
                                   "step": mbps_quantity(step)},
                }
        out.counter_sets.append({"name": cs, "counters": {"bandwidth": bandwidth}})

    for vf in nic.vfs:
        name = f"{prefix}-vf-{vf.index}"
        attrs = {
            **common,
            **location_attributes(vf.pci),
            "type": s("vf"),
            "uuid": s(ctx.uuid(vf.pci.address, name)),
            "parentUUID": s(pf_uuid),
            "pfPciBusID": s(nic.pci.address),
            "vfIndex": i(vf.index),
        }
        if vf.interface:
            attrs["interface"] = s(vf.interface)
        if nic.interface:
            attrs["pfInterface"] = s(nic.interface)
        capacity = None
        consumes = None
        if speed is not None:
            # With valueFrom a VF may be asked for up to the whole link; otherwise it owns its share.
            capacity = {"bandwidth": {"value": mbps_quantity(speed if value_from else share)}}
        if use_counters:
            if value_from:
                counters = {"bandwidth": {"valueFrom": {"capacityName": f"{ctx.driver_name}/bandwidth"}}}
            else:
                counters = {"bandwidth": {"value": mbps_quantity(share)}}
            consumes = [consumption(cs, counters, None)]
        out.devices.append(device(name, attrs, capacity, consumes))
    return out
