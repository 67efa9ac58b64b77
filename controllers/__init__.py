"""SDN controller apps (os-ken, the maintained fork of Ryu)."""
