package integration

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium finds the headless browser (Debian package chromium; the
// setup script installs it).
func chromium(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (integration/setup.sh installs the Debian package chromium); the report is not rendered")
	}
	return p
}

var (
	reTitle    = regexp.MustCompile(`<title>([^<]*)</title>`)
	reRenderMS = regexp.MustCompile(`data-render-ms="(\d+)"`)
	reErrors   = regexp.MustCompile(`<div id="errors">([^<]*)</div>`)
)

// renderReport loads page in headless Chromium: the page writes script
// errors into its title and its own render time into the body. It returns
// that time and the rendered DOM.
func renderReport(t *testing.T, browser, page, shot string) (renderMS int, dom []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--window-size=1280,1300"}
	cmd := exec.CommandContext(ctx, browser, append(flags, "--dump-dom", "file://"+page)...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", page, err)
	}
	m := reTitle.FindSubmatch(dom)
	if m == nil || string(m[1]) != "ibsm report: rendered" {
		t.Fatalf("%s: the page did not finish rendering (title %q)", page, m)
	}
	if e := reErrors.FindSubmatch(dom); e == nil || len(e[1]) > 0 {
		t.Fatalf("%s: script errors in the page: %q", page, e)
	}
	if r := reRenderMS.FindSubmatch(dom); r != nil {
		renderMS, _ = strconv.Atoi(string(r[1]))
	}
	if shot == "" {
		return renderMS, dom
	}
	cmd = exec.CommandContext(ctx, browser, append(flags, "--screenshot="+shot, "file://"+page)...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if colours := distinctColours(img); colours < 20 {
		t.Fatalf("screenshot of %s has %d colours: nothing was drawn", page, colours)
	}
	return renderMS, dom
}

func distinctColours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
		}
	}
	return len(seen)
}

// TestReportRenders writes `ibsm report` for shipped examples — a fat
// tree drawn by tier and a random regular graph drawn force-directed —
// and renders them in headless Chromium: the page finishes without a
// script error and its screenshot shows a drawing. IBSM_REPORT_ALL=1
// renders every shipped example and the 11,664-CA three-level fat tree
// (aggregated) and logs file sizes and render times (BENCHMARKS.md).
func TestReportRenders(t *testing.T) {
	browser := chromium(t)
	examples := []string{"ft2-648-ftree.hcl", "rrg16-sssp-dfsssp.hcl"}
	if os.Getenv("IBSM_REPORT_ALL") != "" {
		all, _ := filepath.Glob("../conf/examples/*.hcl")
		examples = examples[:0]
		for _, e := range all {
			examples = append(examples, filepath.Base(e))
		}
	}
	dir := t.TempDir()
	for i, ex := range examples {
		cfg := filepath.Join(dir, ex)
		// The examples name plugins in ../../bin: point them at this
		// run's binaries.
		src := strings.ReplaceAll(string(mustRead(t, filepath.Join("../conf/examples", ex))), `"../../bin/`, `"`+binDir+`/`)
		src = regexp.MustCompile(`(?m)^(\s*topology\s*=\s*")([^"/]+")`).ReplaceAllString(src, "${1}"+mustAbs(t, "../conf/examples")+"/${2}")
		src = regexp.MustCompile(`(?m)^(\s*state_dir\s*=\s*")[^"]*"`).ReplaceAllString(src, "${1}"+filepath.Join(dir, "state"+strconv.Itoa(i))+`"`)
		if !strings.Contains(src, "state_dir") {
			src = strings.Replace(src, "sm {", "sm {\n  state_dir = \""+filepath.Join(dir, "state"+strconv.Itoa(i))+"\"", 1)
		}
		os.WriteFile(cfg, []byte(src), 0o644)
		if strings.Contains(src, `transport = "ibsim"`) {
			continue // needs a running ibsim
		}
		page := filepath.Join(dir, strings.TrimSuffix(ex, ".hcl")+".html")
		start := time.Now()
		out, errOut, err := ibsmOut(t, "report", "--config", cfg, "--out", page)
		if err != nil {
			t.Fatalf("ibsm report %s: %v\n%s%s", ex, err, out, tail(errOut, 2000))
		}
		took := time.Since(start)
		shot := ""
		if i == 0 || os.Getenv("IBSM_REPORT_ALL") != "" {
			shot = strings.TrimSuffix(page, ".html") + ".png"
		}
		ms, _ := renderReport(t, browser, page, shot)
		fi, _ := os.Stat(page)
		t.Logf("%s: %d bytes, ibsm report %s, rendered in %d ms (page's own clock)", ex, fi.Size(), took.Round(time.Millisecond), ms)
	}
	if os.Getenv("IBSM_REPORT_ALL") == "" {
		return
	}
	// The 11,664-CA three-level fat tree of 36-port switches.
	net := filepath.Join(dir, "ft3-11664.net")
	if out, errOut, err := ibsmTopo(t, net, "fat-tree", "--radix", "36", "--levels", "3"); err != nil {
		t.Fatalf("ibsm topo: %v\n%s%s", err, out, errOut)
	}
	cfgSrc := strings.ReplaceAll(string(mustRead(t, "../conf/examples/ft3-128-sftree.hcl")), `"../../bin/`, `"`+binDir+`/`)
	cfgSrc = regexp.MustCompile(`(?m)^(\s*topology\s*=\s*")[^"]*"`).ReplaceAllString(cfgSrc, "${1}"+net+`"`)
	cfgSrc = regexp.MustCompile(`(?m)^(\s*state_dir\s*=\s*")[^"]*"`).ReplaceAllString(cfgSrc, "${1}"+filepath.Join(dir, "state-big")+`"`)
	// Once sftree alone, once with updn as the candidate beside it (its
	// fallback emptied: it would inherit routing's, updn itself).
	for _, run := range []struct{ name, candidate string }{
		{"ft3-11664", ""},
		{"ft3-11664-candidate", "candidate {\n  engine = \"updn\"\n  fallback = []\n}\n"},
	} {
		cfg := filepath.Join(dir, run.name+".hcl")
		os.WriteFile(cfg, []byte(cfgSrc+run.candidate), 0o644)
		page := filepath.Join(dir, run.name+".html")
		start := time.Now()
		out, errOut, err := ibsmOut(t, "report", "--config", cfg, "--out", page)
		if err != nil {
			t.Fatalf("ibsm report on the 11,664-CA fat tree: %v\n%s%s", err, out, tail(errOut, 2000))
		}
		t.Logf("%s: %s", run.name, strings.TrimSpace(out))
		if run.candidate != "" && !strings.Contains(out, "candidate updn") {
			t.Errorf("the candidate is not on the page")
		}
		took := time.Since(start)
		ms, _ := renderReport(t, browser, page, filepath.Join(dir, run.name+".png"))
		fi, _ := os.Stat(page)
		t.Logf("%s (11,664 CAs, 1,620 switches): %d bytes, ibsm report %s, rendered in %d ms (page's own clock)", run.name, fi.Size(), took.Round(time.Millisecond), ms)
	}
	if keep := os.Getenv("IBSM_REPORT_KEEP"); keep != "" {
		for _, f := range []string{"ft3-11664.png", "ft3-11664-candidate.png", "ft2-648-ftree.png", "rrg16-sssp-dfsssp.png"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				os.WriteFile(filepath.Join(keep, f), b, 0o644)
			}
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// ibsmTopo writes `ibsm topo args…` to path.
func ibsmTopo(t *testing.T, path string, args ...string) (string, string, error) {
	t.Helper()
	out, errOut, err := ibsmOut(t, append([]string{"topo"}, args...)...)
	if err == nil {
		err = os.WriteFile(path, []byte(out), 0o644)
	}
	return "", errOut, err
}

// TestReportCandidate: with a candidate {} block the page draws the
// active and the candidate plan side by side (computed as the shadow
// computes the candidate: same discovery, the active plan's LIDs); a
// candidate the verifier rejects is named on the page beside the active
// plan. Rendered in headless Chromium: no script error, a drawing.
func TestReportCandidate(t *testing.T) {
	browser := chromium(t)
	badPlugin := fmt.Sprintf("plugin \"routing_engine\" \"badengine\" {\n  path = %q\n  config {\n    mode = \"loop\"\n  }\n}\n", filepath.Join(binDir, "ibsm-plugin-badengine"))
	cases := []struct {
		name, cand, extra string
		// what the command prints and the page shows
		plans    string
		captions []string
		pageHas  string
	}{
		{name: "sftree beside updn", cand: rolloutCandidate, plans: "plans: active updn-spines, candidate sftree",
			captions: []string{"active (updn-spines)", "candidate (sftree)"}, pageHas: `<td class="diff">`},
		{name: "rejected candidate", cand: "  engine = \"badengine\"\n", extra: badPlugin, plans: "plans: active updn-spines;",
			captions: []string{"active (updn-spines)"}, pageHas: "candidate plan: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeRolloutConfig(t, dir, 12, rolloutActive, rolloutPolicy, c.cand)
			if c.extra != "" {
				f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(c.extra)
				f.Close()
			}
			page := filepath.Join(dir, "report.html")
			out, errOut, err := ibsmOut(t, "report", "--config", cfg, "--out", page)
			if err != nil {
				t.Fatalf("ibsm report: %v\n%s%s", err, out, tail(errOut, 2000))
			}
			if !strings.Contains(out, c.plans) {
				t.Fatalf("ibsm report printed %q, want %q", out, c.plans)
			}
			_, dom := renderReport(t, browser, page, filepath.Join(dir, "report.png"))
			var got []string
			for _, m := range regexp.MustCompile(`<figcaption>([^<]*)</figcaption>`).FindAllSubmatch(dom, -1) {
				got = append(got, string(m[1]))
			}
			if strings.Join(got, "|") != strings.Join(c.captions, "|") {
				t.Errorf("fabric drawings %q, want %q", got, c.captions)
			}
			if !strings.Contains(string(dom), c.pageHas) {
				t.Errorf("the rendered page lacks %q", c.pageHas)
			}
			if keep := os.Getenv("IBSM_REPORT_KEEP"); keep != "" && c.extra == "" {
				os.WriteFile(filepath.Join(keep, "ft3-432-candidate.png"), mustRead(t, filepath.Join(dir, "report.png")), 0o644)
			}
		})
	}
}
