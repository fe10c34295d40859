# ibsm example: a two-level fat tree of 36-port switches (36 leaves, 18
# spines, 648 hosts) on the embedded simulator.
#
# Every relative path below is relative to THIS file's directory, not to the
# directory ibsm is started from. Before running it:
#
#   - build the plugins (the Makefile puts them in bin/ibsm-plugin-<name> at
#     the repository root);
#   - ft2-648.net ships next to this file (it was written by
#     `ibsm topo fat-tree --radix 36 --levels 2`).

fabric {
  transport = "sim"
  topology  = "ft2-648.net"
  # sm_node = "0x..."  # GUID of the node the SM attaches through; omitted,
  # sm_port = 1        # the simulator picks the first CA port.
}

sm {
  sweep_interval = "10s"
  lmc            = 0
  # LIDs and cached plans survive restarts here. Kept outside the source
  # tree (at the repository root) so runs never dirty conf/examples; a
  # production config uses an absolute path such as /var/lib/ibsm.
  state_dir      = "../../.ibsm-state/ft2-648"
  mad_window     = 16
  mad_timeout    = "200ms"
  mad_retries    = 3
  plugin_timeout = "60s"
  priority       = 15
}

# Plugin binaries are built into bin/ at the repository root. Pin a binary
# with sha256 = "<64 hex digits>" or, better, with
# `ibsm plugins lock --config ft2-648.hcl`.
plugin "routing_engine" "updn" {
  path = "../../bin/ibsm-plugin-updn"
}

plugin "routing_engine" "minhop" {
  path = "../../bin/ibsm-plugin-minhop"
}

plugin "lid_assigner" "sequential" {
  path = "../../bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "single" {
  path = "../../bin/ibsm-plugin-single"
}

routing {
  # Up*/Down* is deadlock-free on a fat tree with one VL. If its plan is
  # rejected by the verifier, min-hop is tried next; the single-VL assigner
  # rejects any plan whose channel dependencies are cyclic, so the fallback
  # can never silently install a deadlock-prone plan.
  engine       = "updn"
  fallback     = ["minhop"]
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
