# ibsm example: the two-level fat tree of ft2-648.net routed by ftree, the
# Zahavi / OpenSM-style fat-tree engine.
#
# ftree routes every CA->CA pair up and down the tree but, by design, gives
# no route between two spines (306 of the 2,862 switch->switch pairs here;
# about a third on a three-level tree). The default policy rejects such a
# plan, so this file opts into best_effort: the plan is installed and the
# unreachable switch pairs are reported as a warning at SUBNET UP (and by
# "ibsm verify"). Prefer ft2-648-sftree.hcl when switch-to-switch
# management traffic matters.
#
# Relative paths are relative to this file's directory.

fabric {
  transport = "sim"
  topology  = "ft2-648.net"
}

sm {
  sweep_interval = "10s"
  # LMC 1 gives every CA two LIDs whose routes descend from different
  # spines; SA PathRecords offer both.
  lmc            = 1
  state_dir      = "../../.ibsm-state/ft2-648-ftree"
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
  # Accept ftree's unrouted switch->switch pairs (see ft2-648-sftree.hcl
  # for the two policies).
  switch_to_switch = "best_effort"
}
