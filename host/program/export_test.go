package program

// Compared is the number of LFT entries the last Apply compared with what
// the switches were known to hold.
func (p *Programmer) Compared() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.compared
}

// Looked is the number of end ports the last Apply looked at for LIDs.
func (p *Programmer) Looked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.looked
}
