package mad

import "time"

// Held reports whether route p is held dead (the probe after a timeout
// runs on its own goroutine: tests wait for it).
func (c *Client) Held(p Path) bool {
	c.dead.mu.Lock()
	defer c.dead.mu.Unlock()
	_, _, held := c.dead.throughLocked(p, time.Now(), false)
	return held
}
