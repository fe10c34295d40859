# ibsm example: a random regular fabric (rrg16.net: 16 switches of 4
# network ports, one CA each; "ibsm topo rrg --switches 16 --ports 4 --cas 1
# --seed 1") routed by sssp, whose balanced shortest paths have cycles of
# channel dependencies: on one VL they could deadlock, so the VL assigner
# spreads them over several VLs (DFSSSP-style: the routes through a cycle's
# weakest dependency move to the next layer; layer k is SL k and VL k).
#
# The host checks the result before programming anything: every VL's
# channel dependency graph must be acyclic and every link must carry the
# VLs it is given (VLCap). "single" would refuse this routing and name the
# cycle; "layered" (LASH-style) is the other choice here. Print the per-VL
# report with "ibsm verify --config rrg16-sssp-dfsssp.hcl".
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
  state_dir      = "../../.ibsm-state/rrg16-sssp-dfsssp"
}

plugin "routing_engine" "sssp" {
  path = "../../bin/ibsm-plugin-sssp"
}

plugin "lid_assigner" "sequential" {
  path = "../../bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "dfsssp" {
  path = "../../bin/ibsm-plugin-dfsssp"
}

routing {
  engine       = "sssp"
  lid_assigner = "sequential"
  vl_assigner  = "dfsssp"
}
