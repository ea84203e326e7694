"""Reading single sysfs attribute files safely, shared by the discovery walker and its helpers.

Why separate from driver.discovery.sysfs: helpers the walker uses (driver.discovery.netdev) need
the same reader without importing the walker's module (which imports them).
"""

from __future__ import annotations

import os
import re
import stat

# A PCI function address as sysfs names it (domain:bus:device.function, lower-case hex).
BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

# A sysfs attribute is at most one page; anything longer is not sysfs.
MAX_ATTRIBUTE_BYTES = 4096


def read_attribute(path: str) -> str:
    """Contents of one sysfs attribute file, stripped.

    Opened non-blocking and checked to be a regular file, so a FIFO or device node planted in a tree
    cannot hang discovery, and at most one page is read, so a huge file cannot exhaust memory.
    Raises OSError (incl. FileNotFoundError), UnicodeDecodeError, or ValueError (not a regular file /
    too large).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = os.read(fd, MAX_ATTRIBUTE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_ATTRIBUTE_BYTES:
        raise ValueError(f"larger than {MAX_ATTRIBUTE_BYTES} bytes")
    return data.decode("utf-8").strip()
