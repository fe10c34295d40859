package mad

// Held reports whether route p is held dead (the probe after a timeout
// runs on its own goroutine: tests wait for it).
func (c *Client) Held(p Path) bool {
	_, held := c.dead.through(p)
	return held
}
