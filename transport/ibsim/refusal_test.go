package ibsim

// A fake ibsim, just enough of the protocol to test how Dial explains a
// refused CONNECT without the real simulator: ibsim's CONNECT checks (a
// free slot, then the node, then one SM client per node), the control
// requests Dial's setup makes, and on the data path a DR NodeInfo to the
// client's own node (answered) and a DR SMInfo (forwarded to the node's SM
// client: a dead one is dropped without a reply, as ibsim 0.10 does when
// its write fails; a live one answers or stays silent; no SM: bounce).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/transport/smp"
)

type smState int

const (
	smNone        smState = iota
	smDead                // registered, process gone: dropped on the first write
	smAnswering           // alive, answers SMInfo
	smSilent              // alive, never answers
	smOurs                // a client of the test attached as SM
	unknownClient         // for fakeClient.sm of non-SM clients
)

type fakeClient struct {
	id   uint32
	node string
	sm   smState
}

type fakeSim struct {
	t     *testing.T
	base  string
	slots int // usable slots (ibsim: 10)
	nodes map[string]bool

	ctl  *net.UnixConn
	outs []*net.UnixConn

	mu      sync.Mutex
	clients []*fakeClient // by slot; nil = free
	smQuery atomic.Int32  // SMInfo queries seen
}

var fakeSeq atomic.Int32

func newFakeSim(t *testing.T, slots int) *fakeSim {
	t.Helper()
	f := &fakeSim{t: t, base: fmt.Sprintf("ibsmfake%d_%d", os.Getpid(), fakeSeq.Add(1)), slots: slots,
		nodes: map[string]bool{"h1": true, "h2": true}, clients: make([]*fakeClient, MaxClients)}
	var err error
	if f.ctl, err = net.ListenUnixgram("unixgram", abs(f.base+":ctl")); err != nil {
		t.Fatal(err)
	}
	for k := range MaxClients {
		o, err := net.ListenUnixgram("unixgram", abs(fmt.Sprintf("%s:out%d", f.base, k)))
		if err != nil {
			t.Fatal(err)
		}
		f.outs = append(f.outs, o)
		go f.serveData(k, o)
	}
	go f.serveCtl()
	t.Cleanup(func() {
		f.ctl.Close()
		for _, o := range f.outs {
			o.Close()
		}
	})
	return f
}

// register puts a pre-existing SM client on node.
func (f *fakeSim) register(node string, st smState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.slots {
		if f.clients[k] == nil {
			f.clients[k] = &fakeClient{id: 1, node: node, sm: st}
			return
		}
	}
	f.t.Fatal("fake: no slot to register an SM in")
}

// attached lists the clients the test attached (not the registered ones).
func (f *fakeSim) attached() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var l []string
	for k, c := range f.clients {
		if c != nil && c.id != 1 {
			l = append(l, fmt.Sprintf("%d:%s", k, c.node))
		}
	}
	return l
}

func (f *fakeSim) serveCtl() {
	b := make([]byte, 2*CtlLen)
	for {
		n, _, err := f.ctl.ReadFromUnix(b)
		if err != nil {
			return
		}
		var c Ctl
		if c.Unmarshal(b[:n]) != nil {
			continue
		}
		to := f.handleCtl(&c)
		if to == "" {
			continue
		}
		var r [CtlLen]byte
		_ = c.MarshalTo(r[:])
		f.ctl.WriteToUnix(r[:], abs(to))
	}
}

// handleCtl answers c in place and returns the reply's destination (Go
// drops the trailing NUL of sender names, so we rebuild it from the id).
func (f *fakeSim) handleCtl(c *Ctl) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Type == CtlConnect {
		var ci ClientInfo
		if ci.Unmarshal(c.Data[:]) != nil {
			return ""
		}
		to := fmt.Sprintf("%s:ctl%d", f.base, ci.ID)
		slot := -1
		for k := range f.slots {
			if f.clients[k] == nil {
				slot = k
				break
			}
		}
		node := ci.NodeID
		if node == "" {
			node = "h1"
		}
		switch {
		case slot < 0, !f.nodes[node]:
			c.Type = CtlError
			return to
		case ci.IsSM:
			for _, o := range f.clients {
				if o != nil && o.node == node && o.sm != smNone && o.sm != unknownClient {
					c.Type = CtlError
					return to
				}
			}
		}
		st := unknownClient
		if ci.IsSM {
			st = smOurs
		}
		f.clients[slot] = &fakeClient{id: ci.ID, node: node, sm: st}
		ci.ID, ci.NodeID = uint32(slot), node
		_ = ci.MarshalTo(c.Data[:])
		return to
	}
	if int(c.ClientID) >= MaxClients || f.clients[c.ClientID] == nil {
		c.Type = CtlError
		return ""
	}
	cl := f.clients[c.ClientID]
	to := fmt.Sprintf("%s:ctl%d", f.base, cl.id)
	clear(c.Data[:])
	switch c.Type {
	case CtlDisconnect:
		f.clients[c.ClientID] = nil
	case CtlGetNodeInfo:
		ni := f.nodeInfo(cl.node)
		_ = ni.MarshalTo(c.Data[:])
	case CtlGetPortInfo:
		pi := smp.PortInfo{LocalPortNum: 1, PortState: smp.PortStateInit}
		_ = pi.MarshalTo(c.Data[:])
	case CtlSetIsSM:
	default:
		c.Type = CtlError
	}
	return to
}

func (f *fakeSim) nodeInfo(node string) smp.NodeInfo {
	g := uint64(0x1000)
	if node == "h2" {
		g = 0x2000
	}
	return smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: smp.NodeTypeCA, NumPorts: 1,
		NodeGUID: g, PortGUID: g + 1, SystemImageGUID: g, LocalPortNum: 1}
}

func (f *fakeSim) serveData(k int, o *net.UnixConn) {
	b := make([]byte, RequestLen+1)
	for {
		n, err := o.Read(b)
		if err != nil {
			return
		}
		h, mad, err := UnmarshalRequest(b[:n])
		if err != nil {
			continue
		}
		var s smp.SMP
		if s.Decode(mad) != nil {
			continue
		}
		f.mu.Lock()
		cl := f.clients[k]
		if cl == nil {
			f.mu.Unlock()
			continue
		}
		to := fmt.Sprintf("%s:in%d", f.base, cl.id)
		reply := true
		switch s.AttrID {
		case smp.AttrNodeInfo:
			ni := f.nodeInfo(cl.node)
			_ = s.SetAttr(&ni)
			s.TurnAround(0)
		case smp.AttrSMInfo:
			f.smQuery.Add(1)
			reply = false
			for j, o := range f.clients {
				if o == nil || o.node != cl.node || o.sm == smNone || o.sm == unknownClient {
					continue
				}
				switch o.sm {
				case smDead:
					f.clients[j] = nil // write failed: "seems to be dead - disconnecting"
				case smAnswering:
					si := smp.SMInfo{GUID: 0x1001, Priority: 1, SMState: smp.SMStateMaster}
					_ = s.SetAttr(&si)
					s.TurnAround(0)
					reply = true
				}
				goto done
			}
			h.Status, reply = StatusBounced, true // nobody to forward to
		done:
		}
		f.mu.Unlock()
		if !reply {
			continue
		}
		out := make([]byte, RequestLen)
		m := make([]byte, MADLen)
		if s.EncodeTo(m) != nil || MarshalRequest(out, &h, m) != nil {
			continue
		}
		o.WriteToUnix(out, abs(to))
	}
}

func TestDialExplainsRefusal(t *testing.T) {
	littleEndianOnly(t)
	cases := []struct {
		name  string
		slots int
		sm    smState // registered on h1 beforehand
		o     Options
		want  []string // "" = Dial succeeds
		query bool     // an SMInfo query reached the fake
	}{
		{name: "all slots taken", slots: 0, o: Options{Attach: "h1", IsSM: true},
			want: []string{`CONNECT to node "h1" on @`, "all 10 of ibsim's client slots are in use", "console command X <slot>", "restart ibsim"}},
		{name: "all slots taken, default node", slots: 0, o: Options{},
			want: []string{"CONNECT to ibsim's default node", "all 10"}},
		{name: "unknown node", slots: MaxClients, o: Options{Attach: "nosuch"},
			want: []string{`CONNECT to node "nosuch" on @`, "ibsim has no such node", "topology file"}},
		{name: "unknown node as SM", slots: MaxClients, o: Options{Attach: "nosuch", IsSM: true},
			want: []string{`CONNECT to node "nosuch" on @`, "no such node"}},
		{name: "live SM answers", slots: MaxClients, sm: smAnswering, o: Options{Attach: "h1", IsSM: true}, query: true,
			want: []string{`CONNECT as SM to node "h1" on @`, "another SM client is attached there, and it answered our SMInfo query", "attach this one to another node", "X <slot>"}},
		{name: "live SM silent", slots: MaxClients, sm: smSilent, o: Options{Attach: "h1", IsSM: true}, query: true,
			want: []string{`CONNECT as SM to node "h1"`, "delivered an SMInfo query to it, so its process is alive"}},
		{name: "dead SM is dropped and replaced", slots: MaxClients, sm: smDead, o: Options{Attach: "h1", IsSM: true}, query: true},
		{name: "dead SM, default node", slots: MaxClients, sm: smDead, o: Options{IsSM: true}, query: true},
		{name: "SM elsewhere is no obstacle", slots: MaxClients, sm: smAnswering, o: Options{Attach: "h2", IsSM: true}},
		{name: "plain client next to an SM", slots: MaxClients, sm: smAnswering, o: Options{Attach: "h1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSim(t, tc.slots)
			if tc.sm != smNone {
				f.register("h1", tc.sm)
			}
			var logBuf syncBuf
			o := tc.o
			o.SockName, o.ControlTimeout = f.base, 300*time.Millisecond
			o.Logger = hclog.New(&hclog.LoggerOptions{Output: &logBuf, Level: hclog.Warn})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, o)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				want := o.Attach
				if want == "" {
					want = "h1" // the fake's default node
				}
				if a := c.Attachment(); a.NodeID != want {
					t.Errorf("attached to %q, want %q", a.NodeID, want)
				}
				if tc.sm == smDead && !strings.Contains(logBuf.String(), "exited without detaching") {
					t.Errorf("no warning about the dead SM's registration; log:\n%s", logBuf.String())
				}
				c.Close()
			} else {
				if err == nil {
					c.Close()
					t.Fatal("Dial succeeded")
				}
				if !errors.Is(err, ErrRefused) {
					t.Errorf("err = %v, want ErrRefused", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v\nwant it to contain %q", err, w)
					}
				}
			}
			if q := f.smQuery.Load() > 0; q != tc.query {
				t.Errorf("SMInfo query sent = %v, want %v", q, tc.query)
			}
			deadline := time.Now().Add(2 * time.Second)
			for len(f.attached()) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if l := f.attached(); len(l) > 0 {
				t.Errorf("Dial left clients attached: %v", l)
			}
		})
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
