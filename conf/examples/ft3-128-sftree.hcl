# ibsm example: the three-level fat tree of ft3-128.net (80 8-port
# switches, 128 hosts; "ibsm topo fat-tree --radix 8 --levels 3") routed by
# sftree: fat-tree up/down routing for CA traffic plus
# deadlock-free switch-to-switch routes (seed paper 004), so every
# switch->switch pair is reachable and the verifier can insist on it.
#
# Relative paths are relative to this file's directory. Build the plugins
# first (make build puts them in bin/ at the repository root).
#
# The same fabric routed by plain ftree, which leaves 28% of the
# switch->switch pairs unrouted, is ft3-128-ftree.hcl.

fabric {
  transport = "sim"
  topology  = "ft3-128.net"
}

sm {
  sweep_interval = "10s"
  lmc            = 0
  state_dir      = "../../.ibsm-state/ft3-128-sftree"
  plugin_timeout = "60s"
}

plugin "routing_engine" "sftree" {
  path = "../../bin/ibsm-plugin-sftree"
  # config {
  #   verify_cdg = true   # sftree proves its own switch routes acyclic too
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
  engine       = "sftree"
  fallback     = ["updn"]
  lid_assigner = "sequential"
  vl_assigner  = "single"

  # What an unreachable switch->switch pair (one switch's port 0 to
  # another's, i.e. switch management traffic) does to a plan:
  #   "required"    (default) the plan is rejected and the next engine in
  #                 fallback is tried;
  #   "best_effort" the plan is accepted; the pairs are counted, sampled and
  #                 logged as a warning at SUBNET UP.
  # Unreachable CA->CA pairs, forwarding loops and credit loops reject a
  # plan under either policy. Changing it re-verifies the cached plans.
  switch_to_switch = "required"
}
