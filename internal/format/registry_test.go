package format

import (
	"strings"
	"testing"
)

// A format registered for these tests only: it shares .json with JSON and
// claims a file by content, and it is read-only.
func init() {
	Register(Format{Kind: "claimtest", Doc: "a test format", Exts: []string{".json"}, ByContent: true, ReadOnly: true,
		Sniff: func(b []byte) bool { return strings.Contains(string(b), `"claimtest"`) }, SniffOrder: 85})
}

func TestDetectByContent(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		want       Kind
	}{
		{"a.json", `{"claimtest": 1}`, "claimtest"},
		{"a.json", `[[1, 2]]`, KindJSON},
		{"A.JSON", `{"claimtest": 1}`, "claimtest"},
		{"-", `{"claimtest": 1}`, "claimtest"}, // stdin: the content alone
		{"-", `[[1, 2]]`, KindJSON},
		{"a.npy", `{"claimtest": 1}`, KindNpy}, // another extension: its own format
		{"noext", "\x93NUMPY", KindNpy},
		{"noext", "", ""},
	} {
		if got := Detect(tc.name, []byte(tc.head)); got != tc.want {
			t.Errorf("Detect(%q, %q) = %q, want %q", tc.name, tc.head, got, tc.want)
		}
	}
	// By extension alone, .json is JSON: the claim needs the content.
	if got := KindByExtension("a.json"); got != KindJSON {
		t.Errorf("KindByExtension(a.json) = %q", got)
	}
	// An output keeps the input's format when the extension is shared.
	if got := OutputKind("out.json", "claimtest"); got != "claimtest" {
		t.Errorf("OutputKind(out.json, claimtest) = %q", got)
	}
	if got := OutputKind("out.json", KindNpy); got != KindJSON {
		t.Errorf("OutputKind(out.json, npy) = %q", got)
	}
}

func TestListsAndReadOnly(t *testing.T) {
	names := Names(nil)
	want := []string{"npy", "raw", "json", "onnx", "npz", "safetensors", "png", "tar"}
	for i, n := range want {
		if i >= len(names) || names[i] != n {
			t.Fatalf("Names(nil) = %v, want it to start %v (Rank order)", names, want)
		}
	}
	for _, n := range Names(Writable) {
		if n == "claimtest" {
			t.Errorf("a read-only format is listed as writable")
		}
	}
	err := ReadOnlyError(Lookup("claimtest"))
	if err == nil || !strings.Contains(err.Error(), "claimtest is read-only") || !strings.Contains(err.Error(), "npy, raw") {
		t.Errorf("ReadOnlyError = %v", err)
	}
	if got := Either([]string{"a"}); got != "a" {
		t.Errorf("Either one = %q", got)
	}
	if got := Either([]string{"a", "b", "c"}); got != "a, b or c" {
		t.Errorf("Either three = %q", got)
	}
	if _, err := ParseKind("nope"); err == nil || !strings.Contains(err.Error(), "npy, raw, json") {
		t.Errorf("ParseKind(nope) = %v", err)
	}
}
