package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/control"
)

// reloadResult answers the "reload" control command: what changed, what
// waits for a restart, or why nothing was applied.
type reloadResult struct {
	app.Settings
	Error string `json:"error,omitempty"`
}

// reloader re-reads the configuration (SIGHUP or `ibsm reload`), one
// reload at a time.
type reloader struct {
	mu       sync.Mutex
	c        *common
	d        *daemonState
	notify   *notifier
	trigger  chan<- struct{}
	flagLvl  hclog.Level        // --log-level: in force when log_level is unset
	onConfig func(*conf.Config) // the metrics endpoint follows metrics_listen
}

// logLevel is the level cfg asks for (its log_level, else the flag's).
func (r *reloader) logLevel(cfg *conf.Config) hclog.Level {
	if cfg.SM.LogLevel != "" {
		return hclog.LevelFromString(cfg.SM.LogLevel)
	}
	return r.flagLvl
}

// reload applies the configuration file as it is now. On error nothing
// changed.
func (r *reloader) reload(ctx context.Context) (app.Settings, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notify.send("RELOADING=1")
	defer r.notify.send("READY=1")
	log := r.d.log
	cfg, err := r.c.load()
	if err != nil {
		return app.Settings{}, err
	}
	log.Info("reloading configuration", "file", r.c.config)
	old := r.d.config()
	if err := r.d.a.Reload(ctx, cfg); err != nil {
		return app.Settings{}, err
	}
	s := r.d.a.ApplySettings(old, cfg)
	if was, now := r.logLevel(old), r.logLevel(cfg); was != now {
		log.SetLevel(now)
		s.Applied = append(s.Applied, fmt.Sprintf("log_level %s → %s", levelName(was), levelName(now)))
	}
	if old.SM.MetricsListen != cfg.SM.MetricsListen {
		s.Applied = append(s.Applied, fmt.Sprintf("metrics_listen %q → %q", old.SM.MetricsListen, cfg.SM.MetricsListen))
	}
	if r.onConfig != nil {
		r.onConfig(cfg)
	}
	r.d.setConfig(cfg)
	log.Info("configuration reloaded", "applied", s.Applied)
	for _, x := range s.Restart {
		log.Warn("setting changed but takes effect only at the next restart", "setting", x)
	}
	select {
	case r.trigger <- struct{}{}:
	default:
	}
	return s, nil
}

// handle serves the "reload" control command.
func (r *reloader) handle(ctx context.Context, raw json.RawMessage) (any, error) {
	if err := control.Decode(raw, &struct{}{}); err != nil {
		return nil, err
	}
	s, err := r.reload(ctx)
	if err != nil {
		r.d.log.Error("reload failed; the running configuration stays in force", "error", err)
		return reloadResult{Error: err.Error()}, nil
	}
	return reloadResult{Settings: s}, nil
}

func cmdReload(args []string, w io.Writer) error {
	var s socketFlags
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	s.flags(fs, 5*time.Minute)
	asJSON := fs.Bool("json", false, "print the outcome as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var res reloadResult
	if err := s.call("reload", nil, &res); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if res.Error == "" {
		fmt.Fprintln(w, "configuration reloaded")
		for _, a := range res.Applied {
			fmt.Fprintf(w, "  applied: %s\n", a)
		}
		for _, x := range res.Restart {
			fmt.Fprintf(w, "  needs a restart: %s\n", x)
		}
	}
	if res.Error != "" {
		return fmt.Errorf("reload failed, the running configuration stays in force:\n%s", res.Error)
	}
	return nil
}
