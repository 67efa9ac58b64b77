"""Start the path installer: python -m controllers --routing FILE --ofp-listen-host 127.0.0.1
--ofp-tcp-listen-port PORT (os-ken 4 has no osken-manager; this is its replacement). It logs to
stderr, which the testbed keeps as the run's controller.log."""
import logging
import sys

from os_ken import cfg
from os_ken import log as oslog
from os_ken.base.app_manager import AppManager
from os_ken.lib import hub

from controllers import path_installer


def main(argv):
    hub.patch(thread=False)
    oslog.early_init_log(logging.INFO)
    cfg.CONF(args=argv, project="os_ken")
    oslog.init_log()
    AppManager.run_apps([path_installer.__name__])


if __name__ == "__main__":
    main(sys.argv[1:])
