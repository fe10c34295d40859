// Command ibsm-deb builds the Debian package of ibsm (`make deb`) with
// nfpm as a library: ibsm in /usr/sbin, the first-party plugins in
// /usr/lib/ibsm/plugins, the default configuration in /etc/ibsm (no
// fabric enabled), the shipped examples in /usr/share/ibsm/examples
// (pointed at the installed plugins), /var/lib/ibsm, the systemd unit,
// /etc/logrotate.d/ibsm for its log, the licence and README in
// /usr/share/doc/ibsm, and the man page ibsm.8, generated from the
// command's own help.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/ibsm/ibsm/conf/atomicfile"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "ibsm-deb: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "bin", "directory holding ibsm and ibsm-plugin-* (make build)")
	out := flag.String("out", "dist", "directory to write the .deb into")
	root := flag.String("root", ".", "the repository (conf/examples, conf/packaging, conf/systemd)")
	version := flag.String("version", "", "package version (default: from `ibsm --version`, else 0.0.0)")
	flag.Parse()
	ibsm := filepath.Join(*bin, "ibsm")
	if _, err := os.Stat(ibsm); err != nil {
		return fmt.Errorf("%w: run `make build` first", err)
	}
	if *version == "" {
		*version = packageVersion(ibsm)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(*out, ".stage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)

	exe := &files.ContentFileInfo{Mode: 0o755}
	doc := &files.ContentFileInfo{Mode: 0o644}
	contents := files.Contents{
		{Source: ibsm, Destination: "/usr/sbin/ibsm", FileInfo: exe},
		{Source: filepath.Join(*root, "conf/packaging/ibsm.hcl"), Destination: "/etc/ibsm/ibsm.hcl", Type: files.TypeConfigNoReplace, FileInfo: doc},
		{Source: filepath.Join(*root, "conf/systemd/ibsm.service"), Destination: "/lib/systemd/system/ibsm.service", FileInfo: doc},
		{Source: filepath.Join(*root, "conf/packaging/ibsm.logrotate"), Destination: "/etc/logrotate.d/ibsm", Type: files.TypeConfigNoReplace, FileInfo: doc},
		{Source: filepath.Join(*root, "LICENSE"), Destination: "/usr/share/doc/ibsm/copyright", FileInfo: doc},
		{Source: filepath.Join(*root, "README.md"), Destination: "/usr/share/doc/ibsm/README.md", FileInfo: doc},
		{Destination: "/var/lib/ibsm", Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o750}},
	}
	plugins, _ := filepath.Glob(filepath.Join(*bin, "ibsm-plugin-*"))
	if len(plugins) == 0 {
		return fmt.Errorf("no ibsm-plugin-* in %s: run `make build` first", *bin)
	}
	for _, p := range plugins {
		if strings.Contains(p, "badengine") {
			continue // a test fixture
		}
		contents = append(contents, &files.Content{Source: p, Destination: "/usr/lib/ibsm/plugins/" + filepath.Base(p), FileInfo: exe})
	}
	examples, err := stageExamples(filepath.Join(*root, "conf/examples"), filepath.Join(stage, "examples"))
	if err != nil {
		return err
	}
	for _, e := range examples {
		contents = append(contents, &files.Content{Source: e, Destination: "/usr/share/ibsm/examples/" + filepath.Base(e), FileInfo: doc})
	}
	man := filepath.Join(stage, "ibsm.8.gz")
	if err := writeMan(ibsm, *version, man); err != nil {
		return err
	}
	contents = append(contents, &files.Content{Source: man, Destination: "/usr/share/man/man8/ibsm.8.gz", FileInfo: doc})

	info := nfpm.WithDefaults(&nfpm.Info{
		Name:        "ibsm",
		Arch:        runtime.GOARCH,
		Platform:    "linux",
		Version:     *version,
		Section:     "net",
		Priority:    "optional",
		Maintainer:  "ibsm developers <ibsm@localhost>",
		Description: "InfiniBand subnet manager with plugin routing\n ibsm discovers an InfiniBand fabric, assigns LIDs, programs forwarding and\n SL-to-VL tables and answers SA queries; routing engines, LID and VL\n assigners run as plugins chosen in HCL.",
		Homepage:    "https://ibsm.invalid/",
		License:     "Apache-2.0",
		Overridables: nfpm.Overridables{
			Contents: contents,
			Suggests: []string{"infiniband-diags", "logrotate"},
			// systemd sees the unit at install, the daemon stops before
			// removal, purge removes state and logs.
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(*root, "conf/packaging/postinst"),
				PreRemove:   filepath.Join(*root, "conf/packaging/prerm"),
				PostRemove:  filepath.Join(*root, "conf/packaging/postrm"),
			},
		},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return err
	}
	if err := nfpm.Validate(info); err != nil {
		return err
	}
	pkg, err := nfpm.Get("deb")
	if err != nil {
		return err
	}
	name := filepath.Join(*out, pkg.ConventionalFileName(info))
	if err := atomicfile.WriteFunc(name, func(w io.Writer) error { return pkg.Package(info, w) }); err != nil {
		return err
	}
	fmt.Println(name)
	return nil
}

var reVersion = regexp.MustCompile(`^ibsm v?([0-9][^ ,]*)`)

// packageVersion is the module version ibsm reports, 0.0.0 for a devel
// build (Debian versions must start with a digit).
func packageVersion(ibsm string) string {
	out, err := runHelp(ibsm, "--version")
	if m := reVersion.FindStringSubmatch(out); err == nil && m != nil {
		return m[1]
	}
	return "0.0.0"
}

var (
	rePluginPath = regexp.MustCompile(`"(\.\./)+bin/(ibsm-plugin-[A-Za-z0-9_-]+)"`)
	reStateDir   = regexp.MustCompile(`(?m)^(\s*state_dir\s*=\s*")[^"]*(")`)
	reTopology   = regexp.MustCompile(`(?m)^(\s*topology\s*=\s*")([^"/]+")`)
)

// stageExamples copies the shipped examples into dir, pointing them at
// the installed plugins and topology files and at a state directory of
// their own under /var/lib/ibsm.
func stageExamples(src, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".hcl") || strings.HasSuffix(e.Name(), ".net")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(e.Name(), ".hcl") {
			s := rePluginPath.ReplaceAllString(string(b), `"/usr/lib/ibsm/plugins/$2"`)
			s = reTopology.ReplaceAllString(s, "${1}/usr/share/ibsm/examples/${2}")
			s = reStateDir.ReplaceAllString(s, "${1}/var/lib/ibsm/examples/"+strings.TrimSuffix(e.Name(), ".hcl")+"${2}")
			b = []byte(s)
		}
		p := filepath.Join(dir, e.Name())
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
