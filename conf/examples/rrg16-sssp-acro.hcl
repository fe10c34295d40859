# ibsm example: the random regular fabric of rrg16.net (16 switches of 4
# network ports, one CA each) routed by sssp and made deadlock-free by ACRO
# (seed paper 001): on each destination's channel dependency tree, channels
# are settled from the destination backwards, so a packet may drop to a
# lower VL along its path. Those per-hop transitions live in the switches'
# SL2VL tables (in-port, out-port, SL); routes are grouped into SL classes
# that agree on every shared hop, at most 16.
#
# The host checks the result on (channel, VL) pairs before programming
# anything, so a dependency that changes VL is judged where its buffers
# really are. The same fabric with one SL per layer is
# rrg16-sssp-dfsssp.hcl.
#
# Relative paths are relative to this file's directory. Build the plugins
# first (make build puts them in bin/ at the repository root).

fabric {
  transport = "sim"
  topology  = "rrg16.net"
}

sm {
  sweep_interval = "10s"
  lmc            = 0
  state_dir      = "../../.ibsm-state/rrg16-sssp-acro"
}

plugin "routing_engine" "sssp" {
  path = "../../bin/ibsm-plugin-sssp"
}

plugin "lid_assigner" "sequential" {
  path = "../../bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "acro" {
  path = "../../bin/ibsm-plugin-acro"
}

routing {
  engine       = "sssp"
  lid_assigner = "sequential"
  vl_assigner  = "acro"
}
