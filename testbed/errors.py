class TestbedError(Exception):
    """A problem the user can fix; the message is one line that names the fix."""
    __test__ = False   # not a pytest test class, despite the name
