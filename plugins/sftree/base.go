package main

import (
	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

// baseConfig is the ftree part of the configuration.
type baseConfig struct {
	ftree ftree.Config
}

func baseSchema() []schema.Attribute {
	return []schema.Attribute{
		schema.Attr("root_guids", cty.List(cty.String),
			`Node GUIDs ("0x...") of the fat tree's top switches, as for ftree. Unset: the switches farthest from any CA-carrying switch.`),
		schema.Attr("ca_order", cty.List(cty.String),
			`CA node or port GUIDs in application rank order, as for ftree: CA routes are spread in this order.`),
	}
}

func configureBase(v cty.Value) (baseConfig, error) {
	var bc baseConfig
	var err error
	if bc.ftree.Roots, err = settings.GUIDs(v, "root_guids"); err != nil {
		return bc, err
	}
	if bc.ftree.CAOrder, err = settings.GUIDs(v, "ca_order"); err != nil {
		return bc, err
	}
	return bc, nil
}
