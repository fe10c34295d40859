// Package gen draws the fabrics 'ibsm topo' writes — fat trees (folded
// Clos of radix-k switches, k-ary n-trees, XGFTs), rings, tori and meshes,
// random irregular graphs, Jellyfish random regular graphs, dragonflies,
// HyperX and Kautz graphs — as port-level graphs and routing snapshots.
// Plugin tests route them without the host; host/topogen writes the same
// graphs as ibnetdiscover/ibsim files (their snapshots are equal).
//
// Every generator is a pure function of its parameters and seed (math/rand
// seeded sources; no map iteration). Conventions shared by all kinds:
//
//   - switch i has GUID SwitchGUIDBase+i, CA j has CAGUIDBase+2j (its port 1
//     is +1), as ibsim assigns port GUIDs;
//   - node ids are short and readable ("ft3-spine-40", "ring-3-host-0") and
//     descriptions say where a node sits ("ft3 pod 2 spine 40");
//   - CAs have one port, cabled to a switch, and are listed first;
//   - all switches of a fabric declare the same port count, the smallest
//     that fits unless overridden, and CAs use the lowest switch ports;
//   - a fabric needing more than 49,151 LIDs or 254 ports per switch is
//     refused. Errors name the 'ibsm topo' flag to change.
package gen
