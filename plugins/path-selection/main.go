// Command path-selection is the path-selection routing engine of Nienaber,
// Yuan and Duan, "On LID Assignment in InfiniBand Networks" (ANCS 2007),
// §5.1, plugin name "path-selection": Up*/Down* from a random (seeded) or
// configured root; Yen's algorithm finds up to k shortest legal paths per
// switch pair on the legal-turn graph; then the most loaded channel
// repeatedly gives up a path of a pair that still has more than one, until
// every pair has one. A "pair" is an ordered switch pair by default
// (granularity = "switch": its machine pairs share the path, so machines of
// one switch never split toward a destination at their own switch), or each
// machine pair (granularity = "machine"). It answers explicit per-pair paths,
// so it must be paired with a path-partitioning LID assigner (color/L is
// Nienaber et al.'s "separate" scheme), not sequential.
//
// Cost: Yen is O(S²·k·h·E) for S switches, h hops, E channels; selection
// O(U·k·h·log E) for U selection units (S² switch pairs or P machine
// pairs); memory about 4·U·k·h bytes.
package main

import "github.com/ibsm/ibsm/plugins/lib/paths"

func main() { paths.Main(paths.KindPathSelection) }
