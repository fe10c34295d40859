# ibsm example: partitions on the two-level fat tree (ft2-648.net) run by
# ibsim. Start the simulator, then ibsm:
#
#   IBSIM_SOCKNAME=ibsm-part ibsim -s conf/examples/ft2-648.net &
#   bin/ibsm run --config conf/examples/partitions.hcl
#
# and check what the ports hold with the stock tools (LID 5 is an example):
#
#   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so \
#     IBSIM_SOCKNAME=ibsm-part smpquery pkeys 5
#
# Relative paths below are relative to THIS file's directory.

fabric {
  transport = "ibsim"
  socket    = "ibsm-part"
}

sm {
  state_dir = "../../.ibsm-state/partitions"
}

plugin "routing_engine" "updn" {
  path = "../../bin/ibsm-plugin-updn"
}

plugin "lid_assigner" "sequential" {
  path = "../../bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "single" {
  path = "../../bin/ibsm-plugin-single"
}

routing {
  engine       = "updn"
  lid_assigner = "sequential"
  vl_assigner  = "single"
}

# The default partition, declared to make the hosts of leaf 0 limited
# members: they reach the SA and every full member (switches, the SM), but
# not each other. Without this block every port is a full member of 0x7fff.
partition "default" {
  pkey            = "0x7fff"
  members         = ["all"]
  limited_members = ["desc:ft2 leaf 0 host *"]
  ipoib {}         # broadcast group with the IPoIB defaults: 2048 bytes, 10 Gb/s, link-local, Q_Key 0x0b1b
}

# Storage: the hosts of leaf 1 as full members; one port of leaf 2 (by port
# GUID) as a limited member, which can reach leaf 1's hosts and no one else
# in this partition. The SM's own port is a full member of every partition.
partition "storage" {
  pkey            = "0x0002"
  members         = ["desc:ft2 leaf 1 host *"]
  limited_members = ["0x0002c90100000049"]
  ipoib {
    mtu  = 4096
    rate = 40
  }
}
