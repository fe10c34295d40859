# The example engine routing the embedded two-level fat tree (648 CAs).
# Paths are relative to this file; sdk/README.md builds the binaries named
# here (the host and first-party plugins with `make build`, the example
# with `go build` in this directory).

fabric {
  transport = "sim"
  topology  = "../../../conf/examples/ft2-648.net"
}

sm {
  state_dir = "../../../.ibsm-state/minimal-engine"
}

plugin "routing_engine" "minimal-engine" {
  path = "../../../bin/ibsm-example-minimal-engine"
  config {
    require_acyclic = true
  }
}

plugin "lid_assigner" "sequential" {
  path = "../../../bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "single" {
  path = "../../../bin/ibsm-plugin-single"
}

routing {
  engine       = "minimal-engine"
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
