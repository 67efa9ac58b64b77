"""How a run ends other than well: each is said in one line, with the exit code run_scenario.py gives."""


class TestbedError(Exception):
    """A problem the user can fix before running (bad option, machine not ready); the message is one
    line that names the fix. Exit code 2."""
    __test__ = False   # not a pytest test class, despite the name
    exit_code = 2


class RunFailure(TestbedError):
    """Something broke while the run was measuring (a rank stuck or dead, a daemon gone); the message
    names what and where. Exit code 1."""
    exit_code = 1


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived; exit code 128 + the signal's number. A BaseException, as
    KeyboardInterrupt is, so that no `except Exception` swallows it."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum
