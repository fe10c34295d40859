// Command shortest-widest is the shortest-widest routing engine of Nienaber,
// Yuan and Duan, "On LID Assignment in InfiniBand Networks" (ANCS 2007),
// §5.1, plugin name "shortest-widest": Up*/Down* from a random (seeded) or
// configured root; pairs are routed one by one, each on the least loaded
// (widest) of its shortest legal paths, whose channels then gain one unit of
// load. It answers explicit per-pair paths, so it must be paired with a
// path-partitioning LID assigner (greedy, color/L, destination renaming…),
// not sequential.
//
// Cost: O(N·E) legal distances plus one small DAG search per pair; 512
// machines on 64 switches (261,632 pairs) route in well under a second.
package main

import "github.com/ibsm/ibsm/plugins/lib/paths"

func main() { paths.Main(paths.KindShortestWidest) }
