package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ibsm/ibsm/host/report"
)

func cmdReport(args []string, w io.Writer) error {
	var c common
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	c.flags(fs)
	out := fs.String("out", "report.html", "the HTML file to write (self-contained: open it in any browser, offline)")
	title := fs.String("title", "", "the page's title (default: the config file's name)")
	shifts := fs.Int("shifts", 0, "shift permutations for the worst-shift load (0: all of them up to 1,024 CAs, else 64)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *shifts < 0 {
		return errors.New("--shifts must be 0 (automatic) or a positive count")
	}
	start := time.Now()
	a, res, err := planOnly(&c)
	if err != nil {
		return err
	}
	defer a.Close()
	if *title == "" {
		*title = "ibsm report: " + filepath.Base(c.config)
	}
	m, err := report.Build(res.Realized, res.VLs, res.Engine, report.Options{Title: *title, Shifts: *shifts})
	if err != nil {
		return err
	}
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("%w (check --out's directory exists and is writable)", err)
	}
	bw := bufio.NewWriter(f)
	err = report.Write(bw, m)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, *out)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	fi, _ := os.Stat(*out)
	fmt.Fprintf(w, "wrote %s (%d bytes; %d switches, %d CAs, %d boxes, %d links drawn%s) in %s\n", *out, fi.Size(), m.Switches, m.CAs,
		len(m.Nodes), len(m.Links), map[bool]string{true: ", aggregated", false: ""}[m.Aggregated], time.Since(start).Round(time.Millisecond))
	return nil
}
