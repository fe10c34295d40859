package sdk

// NewGRPCServer exposes the plugin-side server constructor to the external
// tests, which serve in-process with exactly the options a plugin binary uses.
var NewGRPCServer = newGRPCServer
