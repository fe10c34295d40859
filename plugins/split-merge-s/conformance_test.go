package main

import (
	"testing"

	"github.com/ibsm/ibsm/plugins/internal/lids"
	"github.com/ibsm/ibsm/plugins/internal/lids/lidstest"
)

func TestConformance(t *testing.T) { lidstest.Conformance(t, lids.SplitMergeS) }
