"""PCI addresses as people type them -> the sysfs name of the function."""

import pytest

from driver.errors import InputError
from driver.model.pci import normalize_pci_address


@pytest.mark.parametrize("typed,sysfs", [
    ("0000:07:00.0", "0000:07:00.0"),
    ("0000:0F:00.1", "0000:0f:00.1"),          # upper case
    ("00000000:07:00.0", "0000:07:00.0"),      # nvidia-smi -q / --query-gpu=pci.bus_id
    ("00000000:0F:00.0", "0000:0f:00.0"),
    ("07:00.0", "0000:07:00.0"),               # lspci without -D: domain 0
    (" 0000:07:00.0\n", "0000:07:00.0"),       # pasted with a newline
    ("10000:e1:00.0", "10000:e1:00.0"),        # Intel VMD domain: the kernel prints %04x
    ("0000:07:1f.7", "0000:07:1f.7"),
])
def test_accepted(typed, sysfs):
    assert normalize_pci_address(typed, "--device") == sysfs


@pytest.mark.parametrize("typed,needle", [
    ("07:00", "invalid PCI address"), ("0000:07:00.8", "invalid PCI address"), ("0000:7:00.0", "invalid"),
    ("000000000:07:00.0", "invalid"), ("0000:07:20.0", "device number 20 is above 1f"), ("", "invalid"),
    (None, "invalid"), ("gpu-0", "invalid"),
])
def test_refused_naming_where(typed, needle):
    with pytest.raises(InputError, match=f"^--device: .*{needle}"):
        normalize_pci_address(typed, "--device")
