# ibsm example: a 3-D torus of 5x5x5 switches with one CA each
# ("ibsm topo torus --dims 5x5x5 --cas 1") on the embedded simulator,
# routed in dimension order by the torus engine and made deadlock-free by
# torus-vl with datelines: 2 VLs, one SL bit per dimension (8 SLs), every
# route minimal. Cut a link or lose a switch and the plan takes one more VL
# for first hops while no path changes its SL.
#
# Switches are placed from their NodeDescriptions ("torus 5x5x5 switch
# (x,y,z)"); other fabrics give node_desc_pattern or coordinates {} in
# both plugins' config blocks. "ibsm verify --config torus555.hcl" prints
# the per-VL dependency graphs and the share of minimal paths.
#
# Relative paths are relative to this file's directory. Build the plugins
# first (make build puts them in bin/ at the repository root).

fabric {
  transport = "sim"
  topology  = "torus555.net"
}

sm {
  sweep_interval = "10s"
  state_dir      = "../../.ibsm-state/torus555"
}

plugin "routing_engine" "torus" {
  path = "../../bin/ibsm-plugin-torus"
}

plugin "lid_assigner" "sequential" {
  path = "../../bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "torus-vl" {
  path = "../../bin/ibsm-plugin-torus-vl"
}

routing {
  engine       = "torus"
  lid_assigner = "sequential"
  vl_assigner  = "torus-vl"
}
