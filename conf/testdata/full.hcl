# Every host-owned attribute set to a non-default value.
fabric {
  transport = "sim"
  topology  = "nets/fabric.net"
  sm_node   = "0x0002C90300000001"
  sm_port   = 0
}

sm {
  sweep_interval = "1m30s"
  lmc            = 2
  state_dir      = "state"
  mad_window     = 64
  mad_timeout    = "350ms"
  mad_retries    = 0
  plugin_timeout = "2m"
  priority       = 3
  sm_key         = "0x0123456789abcdef"
  polling_interval = "3s"
  polling_retries  = 2
  honor_priority   = false
}

plugin "routing_engine" "updn" {
  path   = "../bin/ibsm-plugin-updn"
  sha256 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
  config {
    root_guids = ["0x0002c90300000010"]
  }
}

plugin "routing_engine" "minhop" {
  path = "/opt/ibsm/ibsm-plugin-minhop"
}

plugin "routing_engine" "ftree" {
  path = "bin/ibsm-plugin-ftree"
}

plugin "lid_assigner" "sequential" {
  path = "bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "single" {
  path = "bin/ibsm-plugin-single"
}

routing {
  engine       = "updn"
  fallback     = ["ftree", "minhop"]
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
