package all_test

import (
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	_ "github.com/depthspace/depthspace/internal/format/all"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// A format registered for these tests only: it shares .json with JSON and
// claims a file by content, and it is read-only.
func init() {
	format.Register(format.Format{Kind: "claimtest", Doc: "a test format", Exts: []string{".json"}, ByContent: true, ReadOnly: true,
		Sniff: func(b []byte) bool { return strings.Contains(string(b), `"claimtest"`) }, SniffOrder: 85})
}

func TestDetectByContent(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		want       format.Kind
	}{
		{"a.json", `{"claimtest": 1}`, "claimtest"},
		{"a.json", `[[1, 2]]`, json.KindJSON},
		{"A.JSON", `{"claimtest": 1}`, "claimtest"},
		{"-", `{"claimtest": 1}`, "claimtest"}, // stdin: the content alone
		{"-", `[[1, 2]]`, json.KindJSON},
		{"a.npy", `{"claimtest": 1}`, npy.KindNpy}, // another extension: its own format
		{"noext", "\x93NUMPY", npy.KindNpy},
		{"noext", "", ""},
	} {
		if got := format.Detect(tc.name, []byte(tc.head)); got != tc.want {
			t.Errorf("format.Detect(%q, %q) = %q, want %q", tc.name, tc.head, got, tc.want)
		}
	}
	// By extension alone, .json is JSON: the claim needs the content.
	if got := format.KindByExtension("a.json"); got != json.KindJSON {
		t.Errorf("format.KindByExtension(a.json) = %q", got)
	}
	// An output keeps the input's format when the extension is shared.
	if got := format.OutputKind("out.json", "claimtest"); got != "claimtest" {
		t.Errorf("format.OutputKind(out.json, claimtest) = %q", got)
	}
	if got := format.OutputKind("out.json", npy.KindNpy); got != json.KindJSON {
		t.Errorf("format.OutputKind(out.json, npy) = %q", got)
	}
}

func TestListsAndReadOnly(t *testing.T) {
	names := format.Names(nil)
	want := []string{"npy", "raw", "json", "onnx", "npz", "safetensors", "png", "tar"}
	for i, n := range want {
		if i >= len(names) || names[i] != n {
			t.Fatalf("format.Names(nil) = %v, want it to start %v (Rank order)", names, want)
		}
	}
	for _, n := range format.Names(format.Writable) {
		if n == "claimtest" {
			t.Errorf("a read-only format is listed as writable")
		}
	}
	err := format.ReadOnlyError(format.Lookup("claimtest"))
	if err == nil || !strings.Contains(err.Error(), "claimtest is read-only") || !strings.Contains(err.Error(), "npy, raw") {
		t.Errorf("format.ReadOnlyError = %v", err)
	}
	if got := format.Either([]string{"a"}); got != "a" {
		t.Errorf("format.Either one = %q", got)
	}
	if got := format.Either([]string{"a", "b", "c"}); got != "a, b or c" {
		t.Errorf("format.Either three = %q", got)
	}
	if _, err := format.ParseKind("nope"); err == nil || !strings.Contains(err.Error(), "npy, raw, json") {
		t.Errorf("format.ParseKind(nope) = %v", err)
	}
}
