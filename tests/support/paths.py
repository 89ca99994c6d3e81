"""Paths of the repository the tests read: its root, the sample policies, fixtures, goldens."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_POLICIES = ROOT / "data" / "policies"
FIXTURES = ROOT / "tests" / "support" / "fixtures"
GOLDEN = ROOT / "tests" / "support" / "golden"
NETBLOCK = ROOT / "tests" / "support" / "netblock"
