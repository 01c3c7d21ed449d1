package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/walk"
)

// registryList says whether words are, in order, the registry's list of
// the formats of some kind: all of them, the writable ones, the
// containers.
func registryList(words []string) bool {
	for _, keep := range []func(*format.Format) bool{nil, format.Writable, format.IsContainerFormat} {
		if slices.Equal(words, format.Names(keep)) {
			return true
		}
	}
	return false
}

// TestRegistryEverywhere: every registered format appears in every list
// a user sees, so that registering a format is all it takes. A format
// missing from one of them fails here, naming the list.
func TestRegistryEverywhere(t *testing.T) {
	out := func(args ...string) string {
		var o, e bytes.Buffer
		if code := run(args, strings.NewReader(""), &o, &e); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, e.String())
		}
		return o.String()
	}
	flagHelp := func(cmd, flag string) string {
		for _, line := range strings.Split(out(cmd, "--help"), "\n") {
			if f := strings.Fields(line); len(f) > 0 && (f[0] == "--"+flag || len(f) > 1 && f[1] == "--"+flag) {
				return line
			}
		}
		t.Fatalf("%s --help has no --%s", cmd, flag)
		return ""
	}
	docs, err := os.ReadFile("../../docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	root := out("--help")
	// A list of formats in a command's prose ("npy, raw, json") is the
	// registry's whole list, never a hand-written part of it.
	names := map[string]bool{}
	for _, n := range format.Names(nil) {
		names[n] = true
	}
	list := regexp.MustCompile(`[a-z0-9]+(?:, [a-z0-9]+)+(?:,? or [a-z0-9]+)?`)
	for _, cmd := range []string{"s2d", "d2s", "reorder", "convert", "info", "compare"} {
		help := strings.Join(strings.Fields(out(cmd, "--help")), " ")
		for _, l := range list.FindAllString(help, -1) {
			words := strings.FieldsFunc(strings.ReplaceAll(l, " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
			all := true
			for _, w := range words {
				all = all && names[w]
			}
			if all && !registryList(words) {
				t.Errorf("%s --help lists formats by hand: %q (the registry's: %s)", cmd, l, formatList())
			}
		}
	}
	dir := t.TempDir()
	for _, f := range format.All() {
		name := string(f.Kind)
		if f.Doc == "" {
			t.Errorf("%s: registered without a Doc", name)
		}
		if !strings.Contains(root, "  "+name+" ") || !strings.Contains(root, f.Doc) {
			t.Errorf("%s: missing from depthspace --help's table", name)
		}
		if !bytes.Contains(docs, []byte("| `"+name+"` |")) {
			t.Errorf("%s: missing from docs/formats.md's table", name)
		}
		for _, cmd := range []string{"s2d", "d2s", "reorder", "convert", "info", "compare"} {
			if !strings.Contains(flagHelp(cmd, "from"), " "+name) {
				t.Errorf("%s: missing from %s --from's help", name, cmd)
			}
			if f.Container && !strings.Contains(flagHelp(cmd, "member"), name) {
				t.Errorf("%s: a container missing from %s --member's help", name, cmd)
			}
			comp := out("__complete", cmd, "--from", "")
			if !strings.Contains(comp, "\n"+name+"\t") && !strings.HasPrefix(comp, name+"\t") {
				t.Errorf("%s: missing from %s --from's completion", name, cmd)
			}
		}
		for _, cmd := range []string{"s2d", "d2s", "reorder", "convert"} {
			help := flagHelp(cmd, "to")
			comp := out("__complete", cmd, "--to", "")
			inComp := strings.Contains(comp, "\n"+name+"\t") || strings.HasPrefix(comp, name+"\t")
			if format.Writable(f) != strings.Contains(help, " "+name) {
				t.Errorf("%s: %s --to's help says %v, the registry writable %v", name, cmd, !format.Writable(f), format.Writable(f))
			}
			if format.Writable(f) != inComp {
				t.Errorf("%s: %s --to's completion offers it: %v, the registry writable %v", name, cmd, inComp, format.Writable(f))
			}
		}
		// A directory walk picks up its extensions (those it shares with
		// another format are picked up as that one).
		for _, e := range f.Exts {
			if err := os.WriteFile(filepath.Join(dir, "x"+strings.ReplaceAll(name, "/", "_")+e), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := walk.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	walked := map[string]bool{}
	for _, fl := range files {
		walked[filepath.Base(fl.Path)] = true
	}
	for _, f := range format.All() {
		for _, e := range f.Exts {
			if n := "x" + string(f.Kind) + e; !walked[n] {
				t.Errorf("%s: a directory walk leaves out %s", f.Kind, n)
			}
		}
	}
}
