# ibsm example: a ring of 6 switches on the embedded simulator.
#
# Relative paths are relative to this file's directory.
#
# Min-hop routes on a ring of 6 have a cycle of channel dependencies, so with
# a single VL minhop's plan is expected to fail the deadlock check here; the
# host then tries updn, whose up/down rule breaks the cycle. This file
# exercises exactly that fallback.

fabric {
  transport = "sim"
  topology  = "ring6.net"
}

sm {
  sweep_interval = "10s"
  state_dir      = "../../.ibsm-state/ring6"
}

plugin "routing_engine" "minhop" {
  path = "../../bin/ibsm-plugin-minhop"
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
  engine       = "minhop"
  fallback     = ["updn"]
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
