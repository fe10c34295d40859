# ibsm example: a 4x4x4 torus (64 switches, 2 CAs each) made deadlock-free
# on ONE VL by the nue routing engine: each destination's tree is searched
# inside the channel dependency graph of its virtual layer, using only turns
# that keep that layer acyclic, so the routes need no VL assigner's help;
# minhop would deadlock here and updn bends every route through its root.
# The nue VL assigner checks each layer and gives every DLID its layer's SL.
# Raise vls (in both blocks, up to the ports' VLCap) for more minimal paths.
#
# Relative paths are relative to this file's directory. Build the plugins
# first (make build puts them in bin/ at the repository root).

fabric {
  transport = "sim"
  topology  = "nue-torus444.net"
}

sm {
  sweep_interval = "10s"
  lmc            = 0
  state_dir      = "../../.ibsm-state/nue-torus444"
}

plugin "routing_engine" "nue" {
  path = "../../bin/ibsm-plugin-nue"
  config {
    vls = 1
    # trees_per_switch = 1   # one tree per switch: faster, a little less balanced
  }
}

plugin "lid_assigner" "sequential" {
  path = "../../bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "nue-vl" {
  path = "../../bin/ibsm-plugin-nue-vl"
  config {
    vls = 1
  }
}

routing {
  engine       = "nue"
  lid_assigner = "sequential"
  vl_assigner  = "nue-vl"
}
