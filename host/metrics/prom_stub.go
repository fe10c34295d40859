package metrics

import (
	"time"

	"github.com/ibsm/ibsm/transport"
)

// promSet is filled in with the Prometheus collectors.
type promSet struct{}

func (*promSet) sweep(*Sweep)                                    {}
func (*promSet) lightSweep(time.Duration, error)                 {}
func (*promSet) trap(uint16)                                     {}
func (*promSet) pluginCall(string, string, time.Duration, error) {}
func (*promSet) mad(transport.MADEvent, uint8, uint16)           {}
