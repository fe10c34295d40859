package conf

import (
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// FormatDiagnostics renders diagnostics one per line as
// "file:line,col-col: Summary; Detail" (warnings prefixed "warning: "), the
// compact form for logs and single-line CLI output. For source snippets use
// hcl.NewDiagnosticTextWriter with Loader.Files.
func FormatDiagnostics(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning {
			b.WriteString("warning: ")
		}
		if d.Subject != nil {
			b.WriteString(d.Subject.String())
			b.WriteString(": ")
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString("; ")
			b.WriteString(d.Detail)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// WriteDiagnostics writes FormatDiagnostics(diags) to w.
func WriteDiagnostics(w io.Writer, diags hcl.Diagnostics) error {
	_, err := io.WriteString(w, FormatDiagnostics(diags))
	return err
}
