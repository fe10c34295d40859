// Package rollout compares a candidate plan with the plan in force and
// promotes it in stages: it measures both plans with sdk/analysis, counts
// what promotion would send (LFT blocks, SL2VL tables, LIDs), chooses the
// order in which switches take their new tables so that every forwarding
// state the fabric passes through is verified before it is entered, and
// keeps the rollout's state and history in the state directory.
//
// A staged change is a sequence of forwarding states S0 (the active plan),
// S1, ..., Sn (the candidate), each switch holding either its old or its
// new table. Before the fabric moves from S(k-1) to Sk the package checks
// Sk itself (every CA pair delivered, no switch pair lost that both plans
// route, no forwarding loop, an acyclic (channel, VL) dependency graph) and
// the union of the dependencies of S(k-1) and Sk, since packets routed by
// the old tables are still in flight when the new ones take over. The
// union is analysed as one plan in which every destination has two LIDs,
// one forwarded by S(k-1)'s tables and one by Sk's (union.go), so the
// analysis package's own dependency graph and cycle search judge it.
//
// Staged promotion changes forwarding tables only: both plans must give
// every port the same LIDs and every (source, destination) the same SL;
// switches may change their SL2VL tables with their forwarding tables as
// long as the union check can still use one table per switch (a switch
// whose SL2VL table changes is checked against its new table in the union,
// and the union is also checked against its old one).
//
// The package also keeps the record of what the SM last programmed
// (record.go: state_dir/programmed.gob, written after every programming),
// which `ibsm plan diff` compares against when it cannot read the fabric
// and from which a restarted SM restores the tables the switches still hold
// instead of reading them back (restore.go). Every programming first
// leaves state_dir/programmed.gob.stale, and only the record of that
// programming removes it: a record the switches may have moved past is
// never restored from.
package rollout
