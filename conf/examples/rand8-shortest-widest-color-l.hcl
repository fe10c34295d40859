# ibsm example: an irregular fabric (rand8.net: 8 switches, average
# inter-switch degree 3, 16 CAs placed at random; "ibsm topo random
# --switches 8 --degree 3 --cas 16 --seed 3") routed by explicit paths.
#
# shortest-widest (Nienaber et al. §5.1) picks, pair by pair, the least loaded of
# the shortest up*/down* paths. Paths toward one destination need not form a
# tree, so a path LID assigner partitions them: color-l (Nienaber et al. §4.3)
# gives each destination CA as many LIDs as its paths need (LMC per port,
# the smallest that covers them) and tells each source which DLID realises
# its path (SA PathRecords answer with that DLID). Up*/down* paths are
# deadlock-free on one VL, which "single" proves from the tables.
#
# Relative paths are relative to this file's directory. Build the plugins
# first (make build puts them in bin/ at the repository root).

fabric {
  transport = "sim"
  topology  = "rand8.net"
}

sm {
  sweep_interval = "10s"
  # The floor for every port's LMC; color-l raises it per destination.
  lmc       = 0
  state_dir = "../../.ibsm-state/rand8-shortest-widest-color-l"
}

plugin "routing_engine" "shortest-widest" {
  path = "../../bin/ibsm-plugin-shortest-widest"
  config {
    seed = 1 # root switch, pair order and ties
  }
}

plugin "lid_assigner" "color-l" {
  path = "../../bin/ibsm-plugin-color-l"
  # config {
  #   max_lmc    = 7     # a destination needing more than 2^max_lmc LIDs is an error
  #   switch_lmc = false # true gives switch port 0 several LIDs (enhanced port 0)
  # }
}

plugin "vl_assigner" "single" {
  path = "../../bin/ibsm-plugin-single"
}

routing {
  engine       = "shortest-widest"
  lid_assigner = "color-l"
  vl_assigner  = "single"
}
