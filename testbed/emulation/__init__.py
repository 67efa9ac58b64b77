"""Stage 3, emulation: takes a topology and its routing plan and hands on a running network.
``network.Emulation`` builds it with Mininet on Open vSwitch (shaped links, the datapath's send buffer, the
controller process), starts programs inside its hosts (``processes``), and removes exactly what it
made on any exit; the run record (``runrecord``) lets ``--cleanup`` do the same after a crash.
``ovs`` holds every Open vSwitch command.
"""
