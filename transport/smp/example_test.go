package smp_test

import (
	"fmt"

	"github.com/ibsm/ibsm/transport/smp"
)

// A DR Get of NodeInfo two hops away, and decoding its answer.
func ExampleNewDRGet() {
	req, err := smp.NewDRGet(smp.AttrNodeInfo, 0, []uint8{1, 3})
	if err != nil {
		panic(err)
	}
	buf := make([]byte, smp.MADLen)
	if err := req.EncodeTo(buf); err != nil {
		panic(err)
	}
	fmt.Printf("class %#02x hops %d path % x\n", buf[1], buf[7], buf[129:131])

	// What an SMA on the target sends back (here built locally).
	resp := *req
	resp.TurnAround(0)
	_ = resp.SetAttr(&smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeTypeSwitch, NumPorts: 36, NodeGUID: 0x200000})
	_ = resp.EncodeTo(buf)

	var got smp.SMP
	if err := got.Decode(buf); err != nil {
		panic(err)
	}
	var ni smp.NodeInfo
	if err := got.Attr(&ni); err != nil {
		panic(err)
	}
	fmt.Printf("response %v method %#02x: type %d ports %d guid %#x\n", got.IsResponse(), got.Method, ni.NodeType, ni.NumPorts, ni.NodeGUID)
	// Output:
	// class 0x81 hops 2 path 01 03
	// response true method 0x81: type 2 ports 36 guid 0x200000
}
