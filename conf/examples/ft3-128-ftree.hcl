# ibsm example: the three-level fat tree of ft3-128.net (8-port switches:
# 8 pods of 4 leaves and 4 aggregation switches, 16 cores, 128 hosts;
# "ibsm topo fat-tree --radix 8 --levels 3") routed by ftree, the
# Zahavi / OpenSM-style fat-tree engine.
#
# ftree routes every CA->CA pair up and down the tree but, by design, leaves
# switch->switch pairs unrouted that need to turn around above a leaf
# (1,776 of the 6,320 pairs here, 28%). The default policy rejects such a
# plan, so this file opts into best_effort: the plan is installed and the
# unreachable switch pairs are reported as a warning at SUBNET UP (and by
# "ibsm verify"). Prefer ft3-128-sftree.hcl when switch-to-switch
# management traffic matters.
#
# Relative paths are relative to this file's directory.

fabric {
  transport = "sim"
  topology  = "ft3-128.net"
}

sm {
  sweep_interval = "10s"
  # LMC 1 gives every CA two LIDs whose routes descend from different
  # top-level switches; SA PathRecords offer both.
  lmc            = 1
  state_dir      = "../../.ibsm-state/ft3-128-ftree"
  plugin_timeout = "60s"
}

plugin "routing_engine" "ftree" {
  path = "../../bin/ibsm-plugin-ftree"
  # config {
  #   root_guids = ["0x0002c90000000025"]  # default: the switches farthest from the CAs
  # }
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
  engine       = "ftree"
  fallback     = ["updn"]
  lid_assigner = "sequential"
  vl_assigner  = "single"
  # Accept ftree's unrouted switch->switch pairs (see ft3-128-sftree.hcl
  # for the two policies).
  switch_to_switch = "best_effort"
}
