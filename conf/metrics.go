package conf

import (
	"net"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// LogLevels are the values log_level takes (hclog's level names).
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// operate decodes the daemon's operating attributes of the sm block:
// log_level and metrics_listen. Both may change at run time (SIGHUP).
func (d *decoder) operate(a hcl.Attributes, s *SM) {
	var lvl string
	if f := attr(d, a, "log_level", &lvl); f.ok {
		l := strings.ToLower(lvl)
		ok := false
		for _, v := range LogLevels {
			ok = ok || l == v
		}
		if ok {
			s.LogLevel = l
		} else {
			d.errorf(f.rng, "Invalid log level", "log_level = %q; use one of %s.", lvl, strings.Join(LogLevels, ", "))
		}
	}
	var addr string
	if f := attr(d, a, "metrics_listen", &addr); f.ok && addr != "" {
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			d.errorf(f.rng, "Invalid metrics address", `metrics_listen = %q is not host:port; write e.g. "127.0.0.1:9464" (loopback only) or ":9464" (every interface), or leave it out to serve no metrics.`, addr)
		} else {
			s.MetricsListen = addr
		}
	}
}
