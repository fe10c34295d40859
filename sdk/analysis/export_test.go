package analysis

// General returns opt with every LID on the general path, which the
// tests compare with the single-pass path of plain LIDs.
func General(opt Options) Options {
	opt.general = true
	return opt
}
