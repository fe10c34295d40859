// Command layered is a LASH-style VL assigner: every (source switch,
// destination LID) route of the realised tables goes to the lowest virtual
// layer whose channel dependency graph stays acyclic with it (checked
// incrementally) and whose number every link on the route can carry. Layer
// k is SL k and VL k; sources whose route sits in another layer than the
// DLID's default get per-source SL overrides.
package main

import "github.com/ibsm/ibsm/plugins/lib/vl"

func main() { vl.Main(vl.KindLayered) }
