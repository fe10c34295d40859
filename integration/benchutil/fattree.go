package benchutil

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/transport/netfile"
)

// WriteFatTree writes the full 3-level fat tree of radix-port switches as
// dir/ft3-<radix>.net and returns that path.
func WriteFatTree(dir string, radix int) (string, error) {
	f, err := topogen.FatTree{Radix: radix, Levels: 3}.Generate()
	if err != nil {
		return "", err
	}
	net := filepath.Join(dir, fmt.Sprintf("ft3-%d.net", radix))
	w, err := os.Create(net)
	if err != nil {
		return "", err
	}
	if err := netfile.Write(w, f); err != nil {
		w.Close()
		return "", err
	}
	return net, w.Close()
}
