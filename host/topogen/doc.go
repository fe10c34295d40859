// Package topogen writes test fabrics as ibnetdiscover/ibsim topology
// files: the shapes of sdk/testfab/gen (fat trees, rings, tori and meshes,
// random and random regular graphs, dragonflies, HyperX, Kautz), the
// papers' random fabric families (Paper), existing files (Load), and any of
// them degraded by seeded link and switch removal (Degraded). Parse reads
// the command-line form ('ibsm topo' arguments; the command is
// host/cmd/ibsm's topo.go) that experiments and benchmarks use as well.
//
// Generation is a pure function of the parameters and seed, so the same
// command line always gives the same bytes. Files are emitted through
// transport/netfile, the project's one writer; gen documents the GUID,
// naming and port conventions.
package topogen
