package conf

import (
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// MaxAuditSMPs bounds audit_smps (about the LFT blocks of a fabric that
// fills the unicast LID space with a thousand switches).
const MaxAuditSMPs = 1 << 20

func (d *decoder) sm(b *hcl.Block, transport Transport) SM {
	window := DefaultMADWindow
	switch transport {
	case TransportUMAD:
		window = DefaultMADWindowUMAD
	case TransportIBSim:
		window = DefaultMADWindowIBSim
	}
	s := SM{
		SweepInterval: DefaultSweepInterval,
		StateDir:      d.abs(DefaultStateDir),
		MADWindow:     window,
		MADTimeout:    DefaultMADTimeout,
		MADRetries:    DefaultMADRetries,
		PluginTimeout: DefaultPluginTimeout,
		Priority:      DefaultPriority,
		SMKey:         DefaultSMKey,

		PollingInterval: DefaultPollingInterval,
		PollingRetries:  DefaultPollingRetries,
		HonorPriority:   true,
	}
	if b == nil {
		return s
	}
	c := d.content(b.Body, smSchema)
	if c == nil {
		return s
	}
	a := c.Attributes
	d.duration(a, "sweep_interval", &s.SweepInterval, "the light sweep period")
	d.duration(a, "mad_timeout", &s.MADTimeout, "how long to wait for each MAD's response")
	d.duration(a, "plugin_timeout", &s.PluginTimeout, "how long a plugin call may run before it is killed")
	var n int
	if f := attr(d, a, "lmc", &n); f.ok {
		if n < 0 || n > 7 {
			d.errorf(f.rng, "LMC out of range", "lmc = %d; the LID mask control is 0..7 (2^LMC LIDs per port).", n)
		} else {
			s.LMC = uint8(n)
		}
	}
	if f := attr(d, a, "priority", &n); f.ok {
		if n < 0 || n > 15 {
			d.errorf(f.rng, "Priority out of range", "priority = %d; SMInfo priority is 0..15 (15 wins).", n)
		} else {
			s.Priority = uint8(n)
		}
	}
	if f := attr(d, a, "mad_window", &n); f.ok {
		if n < 1 || n > 65535 {
			d.errorf(f.rng, "MAD window out of range", "mad_window = %d; allow 1..65535 outstanding MADs (the default, %d on hardware, %d on ibsim and %d on the embedded fabric, is a good start; raise it on large fabrics whose switches keep up).", n, DefaultMADWindowUMAD, DefaultMADWindowIBSim, DefaultMADWindow)
		} else {
			s.MADWindow = n
		}
	}
	if f := attr(d, a, "mad_retries", &n); f.ok {
		if n < 0 || n > 100 {
			d.errorf(f.rng, "MAD retries out of range", "mad_retries = %d; use 0..100 (3 is typical).", n)
		} else {
			s.MADRetries = n
		}
	}
	if f := attr(d, a, "audit_smps", &n); f.ok {
		switch {
		case n < 0 || n > MaxAuditSMPs:
			d.errorf(f.rng, "Audit budget out of range",
				"audit_smps = %d; it is how many SMPs each light sweep spends reading back programmed LFT blocks and port settings: 0 (audit off) to %d; leave it unset to cover the whole fabric every 5 minutes.", n, MaxAuditSMPs)
		case n == 0:
			s.AuditSMPs = -1
		default:
			s.AuditSMPs = n
		}
	}
	d.duration(a, "polling_interval", &s.PollingInterval, "how often a standby polls the master")
	if f := attr(d, a, "polling_retries", &n); f.ok {
		if n < 1 || n > 100 {
			d.errorf(f.rng, "Polling retries out of range", "polling_retries = %d; a standby takes over after this many failed polls of the master: 1..100 (4 is typical).", n)
		} else {
			s.PollingRetries = n
		}
	}
	attr(d, a, "honor_priority", &s.HonorPriority)
	attr(d, a, "arm_ahead", &s.ArmAhead)
	var key string
	if f := attr(d, a, "sm_key", &key); f.ok {
		if k, ok := parseKey(key); !ok {
			d.errorf(f.rng, "Invalid SM_Key", "sm_key = %q is not a 64-bit key in hex; write it as a string with 0x, like \"0x1234abcd5678ef00\", the same on every SM of the subnet (\"0x0\": no key).", key)
		} else {
			s.SMKey = k
		}
	}
	d.mkeys(a, &s)
	d.operate(a, &s)
	var dir string
	if f := attr(d, a, "state_dir", &dir); f.ok {
		if dir == "" {
			d.errorf(f.rng, "Empty state_dir", "state_dir must name a directory where ibsm keeps LIDs and cached plans.")
		} else {
			s.StateDir = d.abs(dir)
		}
	}
	return s
}

// duration decodes a positive Go duration string such as "10s".
func (d *decoder) duration(a hcl.Attributes, name string, dst *time.Duration, what string) {
	var s string
	f := attr(d, a, name, &s)
	if !f.ok {
		return
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(f.rng, "Invalid duration",
			`%s = %q is not a duration (%s). Write a number with a unit, e.g. "10s", "500ms" or "1m30s".`, name, s, what)
	case v <= 0:
		d.errorf(f.rng, "Invalid duration", "%s = %q must be positive (%s).", name, s, what)
	default:
		*dst = v
	}
}

// parseKey reads a 64-bit key (SM_Key, M_Key) written as a string of hex
// digits with 0x. The 0x is required: HCL turns key = 1234 into "1234",
// which is not the key 1234 the writer meant.
func parseKey(s string) (uint64, bool) {
	h, prefixed := strings.CutPrefix(strings.Replace(s, "0X", "0x", 1), "0x")
	k, err := strconv.ParseUint(h, 16, 64)
	return k, prefixed && err == nil && len(h) <= 16
}

// mkeys decodes m_key, m_key_secret, m_key_protect_bits and
// m_key_lease_period.
func (d *decoder) mkeys(a hcl.Attributes, s *SM) {
	var key, secret, lease string
	var bits int
	fk := attr(d, a, "m_key", &key)
	if fk.ok {
		k, ok := parseKey(key)
		switch {
		case !ok:
			d.errorf(fk.rng, "Invalid M_Key", "m_key = %q is not a 64-bit key in hex; write it as a string with 0x, like \"0x1234abcd5678ef00\" (or set m_key_secret instead to give every port its own key).", key)
		case k == 0:
			d.errorf(fk.rng, "Invalid M_Key", "m_key = %q: M_Key 0 means no protection; remove the line to leave ports unprotected, or give a 64-bit key like \"0x1234abcd5678ef00\".", key)
		default:
			s.MKey = k
		}
	}
	fs := attr(d, a, "m_key_secret", &secret)
	if fs.ok {
		switch {
		case fk.present:
			d.errorf(fs.rng, "Conflicting M_Key settings", "m_key_secret and m_key (at %s) both set; keep one: m_key gives every port the same key, m_key_secret derives a key per port.", fk.rng)
		case len(secret) < MinMKeySecret:
			d.errorf(fs.rng, "M_Key secret too short", "m_key_secret is %d bytes; use at least %d random characters (e.g. the output of \"openssl rand -hex 16\"), the same on every SM of the subnet.", len(secret), MinMKeySecret)
		default:
			s.MKeySecret = secret
		}
	}
	configured := fk.present || fs.present
	if !configured {
		for _, name := range []string{"m_key_protect_bits", "m_key_lease_period"} {
			if x, ok := a[name]; ok {
				d.errorf(x.Range, "M_Key setting without a key", "%s has no effect without m_key or m_key_secret; add one of them, or remove this line.", name)
			}
		}
		return
	}
	s.MKeyProtectBits = DefaultMKeyProtectBits
	if f := attr(d, a, "m_key_protect_bits", &bits); f.ok {
		if bits < 0 || bits > 3 {
			d.errorf(f.rng, "M_Key protection out of range", "m_key_protect_bits = %d; use 0..3: 0 lets anyone read the key, 1 hides it, 2 and 3 also refuse reads without it (Sets without the key are refused at every level).", bits)
		} else {
			s.MKeyProtectBits = uint8(bits)
		}
	}
	if f := attr(d, a, "m_key_lease_period", &lease); f.ok {
		v, err := time.ParseDuration(lease)
		switch {
		case err != nil:
			d.errorf(f.rng, "Invalid duration", `m_key_lease_period = %q is not a duration. Write whole seconds with a unit, e.g. "60s" or "15m", or "0s" for a lease that never expires.`, lease)
		case v < 0 || v > 65535*time.Second || v%time.Second != 0:
			d.errorf(f.rng, "M_Key lease out of range", `m_key_lease_period = %q; PortInfo holds whole seconds, 0s (never expires) to 65535s (18h12m15s).`, lease)
		default:
			s.MKeyLeasePeriod = v
		}
	}
}
