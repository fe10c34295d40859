// Package topogen generates test fabrics as ibnetdiscover/ibsim topology
// files: fat trees (folded Clos of radix-k switches, k-ary n-trees, XGFTs),
// rings, tori and meshes, random irregular graphs and Jellyfish random
// regular graphs. It backs the 'ibsm topo' command (Run).
//
// Every generator is a pure function of its parameters and seed (math/rand
// seeded sources; no map iteration), so the same command line always gives
// the same bytes. Files are emitted through transport/netfile, the project's
// one writer. Conventions shared by all kinds:
//
//   - switch i has GUID SwitchGUIDBase+i, CA j has CAGUIDBase+2j (its port 1
//     is +1), as ibsim assigns port GUIDs;
//   - node ids are short and readable ("ft3-spine-40", "ring-3-host-0") and
//     descriptions say where a node sits ("ft3 pod 2 spine 40");
//   - CAs have one port, cabled to a switch, and are listed first, so the
//     default attach point (first node, port 1) is a host;
//   - all switches of a fabric declare the same port count, the smallest
//     that fits unless overridden, and CAs use the lowest switch ports;
//   - a fabric needing more than 49,151 LIDs or 254 ports per switch is
//     refused.
package topogen
