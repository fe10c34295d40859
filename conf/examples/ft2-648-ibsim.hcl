# ibsm example: the same two-level fat tree (36 leaves, 18 spines, 648
# hosts), driven through a running ibsim instead of the embedded simulator.
#
# Start the simulator first, with its own socket name so it cannot collide
# with another one on this machine, then run ibsm against it:
#
#   IBSIM_SOCKNAME=ibsm-ft2 ibsim -s conf/examples/ft2-648.net &
#   bin/ibsm run --config conf/examples/ft2-648-ibsim.hcl
#
# Tools from infiniband-diags then see ibsm as the SM, e.g.
#   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so \
#     IBSIM_SOCKNAME=ibsm-ft2 sminfo
#
# Relative paths below are relative to THIS file's directory.

fabric {
  transport = "ibsim"
  socket    = "ibsm-ft2"   # ibsim's IBSIM_SOCKNAME
  # attach  = "ft2-leaf-0-host-0"  # node name (as in the .net file) to attach at;
                                   # omitted, ibsim picks its first CA.
}

sm {
  sweep_interval = "10s"
  lmc            = 0
  # LIDs and cached plans survive restarts here. Kept outside the source
  # tree (at the repository root) so runs never dirty conf/examples; a
  # production config uses an absolute path such as /var/lib/ibsm.
  state_dir      = "../../.ibsm-state/ft2-648-ibsim"
  mad_window     = 128              # ibsim's best rate (its default; 16 on the embedded fabric)
  mad_timeout    = "200ms"
  mad_retries    = 3
  plugin_timeout = "60s"
  priority       = 15
}

# Plugin binaries are built into bin/ at the repository root. Pin a binary
# with sha256 = "<64 hex digits>" or, better, with "ibsm plugins lock".
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
