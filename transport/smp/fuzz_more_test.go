package smp

import (
	"reflect"
	"testing"
)

func FuzzLinkRecord(f *testing.F) {
	attrSeed(f, &LinkRecord{1, 2, 3, 4}, LinkRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(LinkRecord), new(LinkRecord), LinkRecordLen, false)
	})
}

func FuzzGUIDInfoRecord(f *testing.F) {
	attrSeed(f, &GUIDInfoRecord{LID: 1, GUIDs: [8]uint64{7}}, GUIDInfoRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(GUIDInfoRecord), new(GUIDInfoRecord), GUIDInfoRecordLen, false)
	})
}

func FuzzSwitchInfoRecord(f *testing.F) {
	attrSeed(f, &SwitchInfoRecord{LID: 1, SwitchInfo: SwitchInfo{LinearFDBCap: 0xC000}}, SwitchInfoRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(SwitchInfoRecord), new(SwitchInfoRecord), SwitchInfoRecordLen, false)
	})
}

func FuzzLFTRecord(f *testing.F) {
	attrSeed(f, &LFTRecord{LID: 1, BlockNum: 2}, LFTRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(LFTRecord), new(LFTRecord), LFTRecordLen, false)
	})
}

func FuzzSL2VLRecord(f *testing.F) {
	attrSeed(f, &SL2VLRecord{LID: 1, InPort: 1, OutPort: 2, Table: SL2VLTable{1, 2}}, SL2VLRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(SL2VLRecord), new(SL2VLRecord), SL2VLRecordLen, false)
	})
}

func FuzzVLArbRecord(f *testing.F) {
	attrSeed(f, &VLArbRecord{LID: 1, OutPort: 1, BlockNum: 1}, VLArbRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(VLArbRecord), new(VLArbRecord), VLArbRecordLen, false)
	})
}

func FuzzServiceRecord(f *testing.F) {
	attrSeed(f, &ServiceRecord{ID: 1, Lease: ServiceLeaseInfinite}, ServiceRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(ServiceRecord), new(ServiceRecord), ServiceRecordLen, false)
	})
}

func FuzzInformInfo(f *testing.F) {
	attrSeed(f, &InformInfo{LIDRangeBegin: 0xFFFF, IsGeneric: true, Subscribe: true, TrapNumber: 64, QPN: 1}, InformInfoLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(InformInfo), new(InformInfo), InformInfoLen, false)
	})
}

func FuzzInformInfoRecord(f *testing.F) {
	attrSeed(f, &InformInfoRecord{Enum: 1, Info: InformInfo{TrapNumber: 65}}, InformInfoRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(InformInfoRecord), new(InformInfoRecord), InformInfoRecordLen, false)
	})
}

// FuzzMultiPathRecord: the record's length depends on its GID counts, so
// roundTrip's fixed size does not apply.
func FuzzMultiPathRecord(f *testing.F) {
	b := make([]byte, SADataLen)
	m := MultiPathRecord{SGIDCount: 1, DGIDCount: 2, GIDs: make([][16]byte, 3)}
	if err := m.MarshalTo(b); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:30])
	f.Fuzz(func(t *testing.T, b []byte) {
		var m, m2 MultiPathRecord
		if err := m.Unmarshal(b); err != nil {
			return
		}
		enc := make([]byte, MultiPathHeaderLen+16*len(m.GIDs))
		if err := m.MarshalTo(enc); err != nil {
			t.Fatalf("decoded MultiPathRecord does not encode: %v", err)
		}
		if err := m2.Unmarshal(enc); err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, m, m2)
		}
	})
}
