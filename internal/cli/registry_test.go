package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/walk"
	"github.com/spf13/cobra"
)

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
	_, memberNames, _ := bytes.Cut(docs, []byte("\n## Member names\n"))
	memberNames, _, _ = bytes.Cut(memberNames, []byte("\n## "))
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
		if f.Container && !bytes.Contains(memberNames, []byte("\n| "+name+" |")) {
			t.Errorf("%s: a container missing from docs/formats.md's Member names table", name)
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

// formatLists are the lists of formats a user may be shown, each from
// the registry: a hand-written list must be one of them, in order.
func formatLists() (names, exts [][]string) {
	for _, keep := range []func(*format.Format) bool{nil, format.Writable, format.IsContainerFormat,
		// The formats of a capability, as design.md and the help name
		// them.
		func(f *format.Format) bool { return f.InTar },
		func(f *format.Format) bool { return f.Decode != nil },
		func(f *format.Format) bool { return f.Preamble != nil },
		func(f *format.Format) bool { return f.Encode != nil },
		func(f *format.Format) bool { return f.InPlace != nil },
		func(f *format.Format) bool { return f.Sniff != nil },
		func(f *format.Format) bool { return f.Open != nil },
		func(f *format.Format) bool { return f.Create != nil },
		isStore} {
		names = append(names, format.Names(keep))
		var e []string
		for _, f := range format.All() {
			if keep == nil || keep(f) {
				for _, x := range f.Exts {
					if !slices.Contains(e, x) {
						e = append(e, x)
					}
				}
			}
		}
		exts = append(exts, e)
	}
	for _, f := range format.All() {
		exts = append(exts, f.Exts) // a format's own, as the root's table shows them
	}
	return names, exts
}

// aside is a parenthesis that says more of a list's item.
var aside = regexp.MustCompile(` \([^()]*\)`)

// handWritten returns the lists of formats or of their extensions in
// text that are not one of the registry's lists: lists of at least
// `least` items (words, or extensions each perhaps followed by an aside)
// separated by commas, semicolons, "or" or "and".
func handWritten(text string, least int) []string {
	more := fmt.Sprintf("{%d,}", least-1)
	nameList := regexp.MustCompile("`?[A-Za-z][A-Za-z0-9]*`?(?:(?:[,;] (?:or |and )?| or | and )`?[A-Za-z][A-Za-z0-9]*`?)" + more)
	extList := regexp.MustCompile("`?\\.[a-z0-9]+`?(?: \\([^()]*\\))?(?:(?:[,;] (?:or |and )?| or | and | )`?\\.[a-z0-9]+`?(?: \\([^()]*\\))?)" + more)
	text = strings.Join(strings.Fields(text), " ")
	names, exts := formatLists()
	known := map[string]bool{}
	for _, n := range names[0] {
		known[n] = true
	}
	for _, e := range exts[0] {
		known[e] = true
	}
	items := func(l string) []string {
		l = aside.ReplaceAllString(l, "")
		return strings.FieldsFunc(strings.ToLower(strings.NewReplacer(" or ", ",", " and ", ",", "`", "", ";", ",").Replace(l)),
			func(r rune) bool { return r == ',' || r == ' ' })
	}
	var bad []string
	for _, c := range []struct {
		re    *regexp.Regexp
		lists [][]string
	}{{nameList, names}, {extList, exts}} {
		for _, l := range c.re.FindAllString(text, -1) {
			words := items(l)
			all := true
			for _, w := range words {
				all = all && known[w]
			}
			if all && !slices.ContainsFunc(c.lists, func(r []string) bool { return slices.Equal(r, words) }) {
				bad = append(bad, l)
			}
		}
	}
	return bad
}

// TestNoHandWrittenFormatList: every list of formats or of their
// extensions that a command's help (two items or more) or the docs
// (three or more: the docs name pairs as examples) show is one of the
// registry's, whole and in its order, so that it cannot go stale when a
// format is added.
func TestNoHandWrittenFormatList(t *testing.T) {
	var o, e bytes.Buffer
	root := newRootCmd(&streams{out: &o, err: &e})
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for _, c := range cmds {
		path := strings.Fields(c.CommandPath())[1:]
		var out, errb bytes.Buffer
		if code := run(append(path, "--help"), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v --help: exit %d: %s", path, code, errb.String())
		}
		for _, l := range handWritten(out.String(), 2) {
			t.Errorf("%q --help lists formats by hand: %q", c.CommandPath(), l)
		}
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	for _, d := range append(docs, "../../README.md") {
		if filepath.Base(d) == "reliability.md" {
			continue // it lists the formats each test feeds, not the tool's
		}
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range handWritten(string(b), 3) {
			t.Errorf("%s lists formats by hand: %q", filepath.Base(d), l)
		}
	}
}
