package sm

import "context"

// AuditIn runs the periodic audit of the fabric model in chunks of chunk
// reads, asking yield after each, as Run's tick does with auditChunk.
func (s *SM) AuditIn(ctx context.Context, chunk int, yield func() bool) {
	s.audit(ctx, s.Fabric(), chunk, yield)
}

// NewSMs is the master's periodic look for new SMs (newSMs).
func (s *SM) NewSMs(ctx context.Context, yield func() bool) (found, done bool) {
	return s.newSMs(ctx, yield)
}
