# /etc/ibsm/ibsm.hcl — the configuration the ibsm.service unit runs.
#
# Out of the box nothing is enabled: pick a fabric below (real hardware
# through umad, or the embedded simulator to try ibsm), then
#   systemctl enable --now ibsm
# Reload after edits with `systemctl reload ibsm` (or `ibsm reload`);
# `ibsm status` shows what the daemon does. Examples of every routing
# setup are in /usr/share/ibsm/examples/ (ibsm.8 documents the commands).

# Real hardware: the first port of the first HCA.
# fabric {
#   transport = "umad"
#   device    = "mlx5_0"
#   port      = 1
# }

# The embedded simulated fabric (off: uncomment to try ibsm without
# hardware; the 2-level fat tree of 36-port switches, 648 CAs).
# fabric {
#   transport = "sim"
#   topology  = "/usr/share/ibsm/examples/ft2-648.net"
# }

sm {
  state_dir      = "/var/lib/ibsm"
  sweep_interval = "10s"
  priority       = 14
  # log_level      = "info"
  # metrics_listen = "127.0.0.1:9464"   # Prometheus metrics, off by default
}

plugin "routing_engine" "updn" {
  path = "/usr/lib/ibsm/plugins/ibsm-plugin-updn"
}

plugin "routing_engine" "minhop" {
  path = "/usr/lib/ibsm/plugins/ibsm-plugin-minhop"
}

plugin "lid_assigner" "sequential" {
  path = "/usr/lib/ibsm/plugins/ibsm-plugin-sequential"
}

plugin "vl_assigner" "single" {
  path = "/usr/lib/ibsm/plugins/ibsm-plugin-single"
}

routing {
  engine       = "updn"
  fallback     = ["minhop"]
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
