package sdk

// Serve runs a plugin binary: it registers the gRPC services matching the
// kind interface p implements and blocks until the host stops it.
func Serve(p Plugin) {
	panic("sdk.Serve: not implemented yet")
}
