package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// TestREADME: the README names this plugin and its kind, and its config
// table is the schema the plugin declares (IBSM_UPDATE_README=1 rewrites it).
func TestREADME(t *testing.T) {
	sdktest.CheckREADME(t, &engine{log: hclog.NewNullLogger()}, "README.md")
}
