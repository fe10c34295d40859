// Package topogen writes test fabrics as ibnetdiscover/ibsim topology
// files: the shapes of sdk/testfab/gen (fat trees, rings, tori and meshes,
// random and random regular graphs, dragonflies, HyperX, Kautz), the
// papers' random fabric families (Paper), existing files (Load), and any of
// them degraded by seeded link and switch removal (Degraded). It backs the
// 'ibsm topo' command (Run).
//
// Generation is a pure function of the parameters and seed, so the same
// command line always gives the same bytes. Files are emitted through
// transport/netfile, the project's one writer; gen documents the GUID,
// naming and port conventions.
package topogen
