package smp

import "testing"

func TestSARecords(t *testing.T) {
	ni := NodeInfo{1, 1, NodeTypeCA, 2, 0x10, 0x10, 0x11, 64, 0, 0xA1, 1, 0x2C9}
	nr := NodeRecord{LID: 5, NodeInfo: ni, NodeDescription: NodeDescription{"hostA"}}
	b := make([]byte, NodeRecordLen)
	if err := nr.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	// LID at 0, reserved 2..3, NodeInfo at 4 (NodeType at 4+2), description at 44.
	if b[1] != 5 || b[6] != NodeTypeCA || string(b[44:49]) != "hostA" || b[49] != 0 {
		t.Fatalf("NodeRecord bytes %x", b)
	}
	var nr2 NodeRecord
	if err := nr2.Unmarshal(b); err != nil || nr2 != nr {
		t.Fatalf("NodeRecord round trip %+v %v", nr2, err)
	}

	pr := PortInfoRecord{EndportLID: 0x12, PortNum: 3, PortInfo: testPortInfo}
	b = make([]byte, PortInfoRecordLen)
	if err := pr.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if b[1] != 0x12 || b[2] != 3 || b[4] != 0x01 || b[4+34] != 0x83 {
		t.Fatalf("PortInfoRecord bytes %x", b)
	}
	var pr2 PortInfoRecord
	if err := pr2.Unmarshal(b); err != nil || pr2 != pr {
		t.Fatalf("PortInfoRecord round trip %v", err)
	}

	sr := SMInfoRecord{LID: 1, SMInfo: SMInfo{GUID: 7, Priority: 1, SMState: SMStateMaster}}
	b = make([]byte, SMInfoRecordLen)
	if err := sr.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if b[1] != 1 || b[11] != 7 || b[24] != 0x13 {
		t.Fatalf("SMInfoRecord bytes %x", b)
	}
	var sr2 SMInfoRecord
	if err := sr2.Unmarshal(b); err != nil || sr2 != sr {
		t.Fatalf("SMInfoRecord round trip %v", err)
	}
	if s := SARecordStride(NodeRecordLen); s != 14 {
		t.Fatalf("stride %d", s)
	}
	for _, a := range []Attribute{&nr2, &pr2, &sr2} {
		if err := a.Unmarshal(make([]byte, 10)); err == nil {
			t.Errorf("%T accepted 10 bytes", a)
		}
	}
}
