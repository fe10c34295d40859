package main

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestConfigure(t *testing.T) {
	e := newTestEngine()
	for _, v := range []cty.Value{cty.NilVal, cty.NullVal(e.Schema().ObjectType()), e.Schema().Defaults(), cty.EmptyObjectVal} {
		if err := e.Configure(v); err != nil {
			t.Errorf("Configure(%#v): %v", v, err)
		}
	}
	if err := e.Configure(cty.ObjectVal(map[string]cty.Value{"lmc": cty.NumberIntVal(1)})); err == nil {
		t.Error("an attribute the schema does not have was accepted")
	}
	if info := e.Info(); info.Name != "sssp" || len(info.Capabilities) != 1 || info.Capabilities[0] != "lmc" {
		t.Errorf("Info = %+v", info)
	}
}
