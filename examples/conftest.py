"""The examples users copy run in the slow set (./setup.sh test -m slow; CI runs it): each pairs two
fabrics over several hash draws, one to two minutes each."""
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "examples" in str(item.fspath):
            item.add_marker(pytest.mark.slow)
