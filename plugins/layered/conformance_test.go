package main

import (
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/plugins/lib/vl/vltest"
)

func TestConformance(t *testing.T) { vltest.Conformance(t, vl.KindLayered, nil) }
