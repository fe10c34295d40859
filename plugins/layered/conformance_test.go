package main

import (
	"testing"

	"github.com/ibsm/ibsm/plugins/internal/vl"
	"github.com/ibsm/ibsm/plugins/internal/vl/vltest"
)

func TestConformance(t *testing.T) { vltest.Conformance(t, vl.KindLayered, nil) }
