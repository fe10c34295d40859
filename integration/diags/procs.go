package diags

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// GroupMembers lists the live (non-zombie) processes in process group
// pgid, by scanning /proc. It lets a test prove that nothing it started
// (an SM, its plugins, a tool) survives.
func GroupMembers(pgid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		st, err := parseStat(string(b))
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		if st.pgrp == pgid && st.state != "Z" && st.state != "X" {
			out = append(out, pid)
		}
	}
	return out, nil
}

type procStat struct {
	state      string
	ppid, pgrp int
}

// parseStat reads state, ppid and pgrp from /proc/<pid>/stat; the command
// name in parentheses may itself contain spaces and parentheses.
func parseStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("no ')' after the command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return procStat{}, errors.New("too few fields")
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, err
	}
	return procStat{state: f[0], ppid: ppid, pgrp: pgrp}, nil
}
