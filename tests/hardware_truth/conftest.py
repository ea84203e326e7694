"""Makes this directory's helper modules (truth, truth_hosts, truth_sysfs) importable by the tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
