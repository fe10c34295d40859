// Command dfsssp is a DFSSSP-style VL assigner: all routes of the
// realised tables start in layer 0; while a layer's channel dependency
// graph has a cycle, the routes through the cycle's weakest dependency (the
// one fewest routes use) move to the next layer. Layer k is SL k and VL k.
package main

import "github.com/ibsm/ibsm/plugins/lib/vl"

func main() { vl.Main(vl.KindDFSSSP) }
