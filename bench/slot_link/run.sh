#!/usr/bin/env bash
# The slot recipe, measured: two slots, each a network namespace with its own ovsdb-server and
# userspace ovs-vswitchd and one switch; an os-ken app on 127.0.0.1 reached from each slot through a
# unix socket that socat relays (a slot's namespace has its own loopback); the link between the two
# switches cut: a VXLAN device at each end (df set, one VNI) over a veth underlay of MTU 9050, or
# (LINK=veth) a plain veth for comparison. One host per slot. Prints the controller's wiring, a
# full-frame DF ping, small-packet RTT and an iperf3 flow against the link rate (RATE, Mbit/s).
#
#     sudo RATE=100 LINK=vxlan|veth bench/slot_link/run.sh
#
# Everything it makes (namespaces tbspike*, processes, /tmp/slotspike) goes on exit.
set -u
S=/tmp/slotspike
RATE=${RATE:-100}
PORT=6699
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for k in 1 2; do
    for f in $S/$k/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  done
  sleep 1
  for n in tbspike1 tbspike2 tbspikeha tbspikehb; do ip netns del $n 2>/dev/null; done
  rm -rf $S
}
trap cleanup EXIT
rm -rf $S; mkdir -p $S/1 $S/2
cd "$(dirname "$0")/../.."
.venv/bin/python bench/slot_link/wire_app.py --ofp-listen-host 127.0.0.1 --ofp-tcp-listen-port $PORT > $S/osken.log 2>&1 &
PIDS+=($!); sleep 3
for k in 1 2; do
  ip netns add tbspike$k
  export OVS_RUNDIR=$S/$k OVS_LOGDIR=$S/$k OVS_DBDIR=$S/$k
  ovsdb-tool create $S/$k/conf.db /usr/share/openvswitch/vswitch.ovsschema
  ip netns exec tbspike$k ovsdb-server $S/$k/conf.db --remote=punix:$S/$k/db.sock --pidfile=$S/$k/ovsdb.pid \
     --unixctl=$S/$k/ovsdb.ctl --log-file=$S/$k/ovsdb.log --detach
  ovs-vsctl --db=unix:$S/$k/db.sock --no-wait init
  ip netns exec tbspike$k ovs-vswitchd unix:$S/$k/db.sock --pidfile=$S/$k/vswitchd.pid --unixctl=$S/$k/vswitchd.ctl \
     --log-file=$S/$k/vswitchd.log --detach
  socat UNIX-LISTEN:$S/$k/ctl.sock,fork TCP:127.0.0.1:$PORT &
  PIDS+=($!)
  ovs-vsctl --db=unix:$S/$k/db.sock add-br sw$k -- set bridge sw$k datapath_type=netdev fail_mode=secure \
     protocols=OpenFlow13 other_config:datapath-id=000000000000000$k -- set-controller sw$k unix:$S/$k/ctl.sock
  ip -n tbspike$k link set lo up
done
# underlay
ip link add ul1 netns tbspike1 mtu 9050 type veth peer name ul2 netns tbspike2 mtu 9050
ip -n tbspike1 addr add 192.168.255.1/30 dev ul1; ip -n tbspike1 link set ul1 up
ip -n tbspike2 addr add 192.168.255.2/30 dev ul2; ip -n tbspike2 link set ul2 up
# hosts
for x in a b; do
  k=$([ $x = a ] && echo 1 || echo 2)
  ip netns add tbspikeh$x
  ip link add h$x-eth0 netns tbspikeh$x mtu 9000 type veth peer name sw$k-eth1 netns tbspike$k mtu 9000
  ip -n tbspikeh$x addr add 10.0.0.$k/24 dev h$x-eth0
  ip -n tbspikeh$x link set h$x-eth0 up; ip -n tbspikeh$x link set lo up
  ip netns exec tbspikeh$x ethtool -K h$x-eth0 tx off tso off gso off >/dev/null
  ip -n tbspike$k link set sw$k-eth1 up
  ip netns exec tbspike$k ethtool -K sw$k-eth1 tx off tso off gso off >/dev/null
  ip netns exec tbspikeh$x tc qdisc add dev h$x-eth0 root handle 1: htb default 1
  ip netns exec tbspikeh$x tc class add dev h$x-eth0 parent 1: classid 1:1 htb rate ${RATE}mbit
  # VXLAN: the cut link, named as the port it replaces
  other=$([ $k = 1 ] && echo 2 || echo 1)
  if [ "${LINK:-vxlan}" = vxlan ]; then
    ip -n tbspike$k link add sw$k-eth2 mtu 9000 type vxlan id 7 local 192.168.255.$k remote 192.168.255.$other dstport 4789 df set
  elif [ $k = 1 ]; then
    ip link add sw1-eth2 netns tbspike1 mtu 9000 type veth peer name sw2-eth2 netns tbspike2 mtu 9000
    ip netns exec tbspike1 ethtool -K sw1-eth2 tx off tso off gso off >/dev/null
    ip netns exec tbspike2 ethtool -K sw2-eth2 tx off tso off gso off >/dev/null
  fi
  ip -n tbspike$k link set sw$k-eth2 up
  for p in 1 2; do
    ip netns exec tbspike$k tc qdisc add dev sw$k-eth$p root handle 1: htb default 1
    ip netns exec tbspike$k tc class add dev sw$k-eth$p parent 1: classid 1:1 htb rate ${RATE}mbit
    OVS_RUNDIR=$S/$k ovs-vsctl --db=unix:$S/$k/db.sock add-port sw$k sw$k-eth$p -- set interface sw$k-eth$p ofport_request=$p
  done
done
sleep 4
for k in 1 2; do echo "slot $k:"; ovs-vsctl --db=unix:$S/$k/db.sock --columns=target,is_connected list controller | tr -s ' '; done
ip netns exec tbspikeha ping -c 3 -W 2 -M do -s 8972 10.0.0.2 | tail -2
ip netns exec tbspikeha ping -q -c 50 -i 0.05 -W 2 10.0.0.2 | tail -1
ip netns exec tbspikeha ping -c 1 -W 2 -M do -s 8973 10.0.0.2 | tail -2
ip netns exec tbspikehb iperf3 -s -1 -p 5201 > /dev/null 2>&1 &
PIDS+=($!)   # not -D: a daemon would escape the cleanup when no client comes
sleep 1
ip netns exec tbspikeha iperf3 -c 10.0.0.2 -t 6 -p 5201 -J > $S/iperf.json
python3 -c "import json;d=json.load(open('$S/iperf.json'));r=d['end']['sum_received']['bits_per_second']/1e6;print(f'iperf3 over the cut link: {r:.1f} Mbit/s of $RATE, {r/$RATE/((9000-52)/(9000+14)):.3f} of the TCP ceiling')"
for k in 1 2; do ip -n tbspike$k -s link show sw$k-eth2 | sed -n '3,6p'; done
ip netns exec tbspike1 cat /proc/net/snmp | grep -A1 '^Udp:' | tail -1
for k in 1 2; do echo "vswitchd $k pid $(cat $S/$k/vswitchd.pid) netns $(readlink /proc/$(cat $S/$k/vswitchd.pid)/ns/net)"; done
OVS_RUNDIR=$S/1 ovs-ofctl -O OpenFlow13 dump-flows unix:$S/1/sw1.mgmt | head -5
