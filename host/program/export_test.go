package program

// Compared is the number of LFT entries the last Apply compared with what
// the switches were known to hold.
func (p *Programmer) Compared() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.compared
}
