package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// metricsEndpoint serves /metrics on sm.metrics_listen, following the
// address across reloads ("" stops it).
type metricsEndpoint struct {
	reg *prometheus.Registry
	log hclog.Logger

	mu   sync.Mutex
	addr string
	srv  *http.Server
	ln   net.Listener
}

func newMetricsEndpoint(d *daemonState) *metricsEndpoint {
	return &metricsEndpoint{reg: d.rec.Registry(d.status), log: d.log.Named("metrics")}
}

// set serves on addr, moving from the address served so far; an address
// that cannot be bound is logged and leaves the old one serving.
func (m *metricsEndpoint) set(addr string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if addr == m.addr {
		return nil
	}
	var ln net.Listener
	if addr != "" {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("metrics_listen %q: %w (choose a free address or leave metrics_listen out)", addr, err)
		}
	}
	m.stopLocked()
	m.addr = addr
	if ln == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(m.reg))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	m.srv, m.ln = srv, ln
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics endpoint stopped", "error", err)
		}
	}()
	m.log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

func (m *metricsEndpoint) stopLocked() {
	if m.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = m.srv.Shutdown(ctx)
		cancel()
		m.srv, m.ln = nil, nil
	}
}

func (m *metricsEndpoint) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopLocked()
	m.addr = ""
}
