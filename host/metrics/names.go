package metrics

import (
	"fmt"

	"github.com/ibsm/ibsm/transport/smp"
)

// Attribute names for metric labels (IBA 14.2.5 SMP attributes, 15.2.5 SA
// attributes); others are shown as hex.
var smpAttrNames = map[uint16]string{
	smp.AttrNotice: "Notice", smp.AttrNodeDescription: "NodeDescription", smp.AttrNodeInfo: "NodeInfo",
	smp.AttrSwitchInfo: "SwitchInfo", smp.AttrGUIDInfo: "GUIDInfo", smp.AttrPortInfo: "PortInfo",
	smp.AttrPKeyTable: "P_KeyTable", smp.AttrSLtoVLMappingTable: "SLtoVLMappingTable",
	smp.AttrVLArbitrationTable: "VLArbitrationTable", smp.AttrLinearForwardingTable: "LinearForwardingTable",
	smp.AttrMulticastForwardingTable: "MulticastForwardingTable", smp.AttrSMInfo: "SMInfo",
}

var saAttrNames = map[uint16]string{
	smp.SAAttrClassPortInfo: "ClassPortInfo", smp.SAAttrNotice: "Notice", smp.SAAttrInformInfo: "InformInfo",
	smp.SAAttrNodeRecord: "NodeRecord", smp.SAAttrPortInfoRecord: "PortInfoRecord", smp.SAAttrSwitchInfoRecord: "SwitchInfoRecord",
	smp.SAAttrLFTRecord: "LinearForwardingTableRecord", smp.SAAttrSMInfoRecord: "SMInfoRecord", smp.SAAttrLinkRecord: "LinkRecord",
	smp.SAAttrServiceRecord: "ServiceRecord", smp.SAAttrPKeyTableRecord: "P_KeyTableRecord", smp.SAAttrPathRecord: "PathRecord",
	smp.SAAttrMCMemberRecord: "MCMemberRecord", smp.SAAttrMultiPathRecord: "MultiPathRecord", smp.SAAttrGUIDInfoRecord: "GUIDInfoRecord",
	smp.SAAttrVLArbRecord: "VLArbitrationTableRecord", smp.SAAttrInformInfoRecord: "InformInfoRecord",
}

// attrName names attribute attr of management class class.
func attrName(class uint8, attr uint16) string {
	names := smpAttrNames
	if class == smp.ClassSA {
		names = saAttrNames
	}
	if n, ok := names[attr]; ok {
		return n
	}
	return fmt.Sprintf("0x%04x", attr)
}

// className names the management classes the SM sends.
func className(class uint8) string {
	switch class {
	case smp.ClassSMPLID:
		return "smp_lid"
	case smp.ClassSMPDR:
		return "smp_dr"
	case smp.ClassSA:
		return "sa"
	}
	return fmt.Sprintf("0x%02x", class)
}

// saStatus names the MAD status of an SA answer (IBA 13.4.7 and 15.2.1.2
// class-specific codes in bits 8..14).
func saStatus(status uint16) string {
	switch status {
	case 0:
		return "ok"
	case 0x0004:
		return "bad_version"
	case 0x0008:
		return "method_unsupported"
	case 0x000C:
		return "method_attr_unsupported"
	case 0x001C:
		return "invalid_attr_value"
	}
	switch status >> 8 {
	case 1:
		return "no_resources"
	case 2:
		return "req_invalid"
	case 3:
		return "no_records"
	case 4:
		return "too_many_records"
	case 5:
		return "invalid_gid"
	case 6:
		return "insufficient_components"
	case 7:
		return "denied"
	}
	return fmt.Sprintf("0x%04x", status)
}
