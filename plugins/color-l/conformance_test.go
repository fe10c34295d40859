package main

import (
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/lids"
	"github.com/ibsm/ibsm/plugins/lib/lids/lidstest"
)

func TestConformance(t *testing.T) { lidstest.Conformance(t, lids.ColorL) }
