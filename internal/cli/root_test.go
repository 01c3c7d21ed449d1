package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// A run that names a command builds only that command; the table it is
// found in must agree with the commands themselves, and a run that names
// none (help, a typo) still sees them all.
func TestRootBuildsTheNamedCommand(t *testing.T) {
	s := &streams{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	for _, sub := range subcommands {
		c := sub.build(s)
		got := append([]string{c.Name()}, c.Aliases...)
		if !slices.Equal(got, sub.names) {
			t.Errorf("table names %v, the command answers to %v", sub.names, got)
		}
		for _, n := range sub.names {
			root := newRootCmdFor(s, []string{n, "--help"})
			if cs := root.Commands(); len(cs) != 1 || cs[0].Name() != c.Name() {
				t.Errorf("a run of %q built %d commands", n, len(cs))
			}
		}
	}
	if cs := newRootCmdFor(s, []string{"--version"}).Commands(); len(cs) != 0 {
		t.Errorf("--version built %d commands", len(cs))
	}
	for _, args := range [][]string{nil, {"--help"}, {"help", "s2d"}, {"s2dd"}, {"__complete", "s"}} {
		if cs := newRootCmdFor(s, args).Commands(); len(cs) < len(subcommands) {
			t.Errorf("%q built %d commands, want all %d", args, len(cs), len(subcommands))
		}
	}

	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--help: exit %d, %s", code, errb.String())
	}
	for _, sub := range subcommands {
		if !strings.Contains(out.String(), "  "+sub.names[0]+" ") {
			t.Errorf("--help does not list %s", sub.names[0])
		}
	}
	out.Reset()
	if code := run([]string{"s2dd"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "s2d") {
		t.Errorf("a mistyped command: exit %d, %q (want 2 and a suggestion)", code, errb.String())
	}
	// The version flag is root's own (versionFlag), not cobra's: the same
	// line from every spelling, help listing it, help winning over it.
	want := "depthspace " + versionString() + "\n"
	for _, args := range [][]string{{"--version"}, {"-v"}, {"--version=true"}, {"-v", "--version"}} {
		out.Reset()
		if code := run(args, strings.NewReader(""), &out, &errb); code != 0 || out.String() != want {
			t.Errorf("%q: exit %d, %q, want %q", args, code, out.String(), want)
		}
	}
	out.Reset()
	if code := run([]string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "-v, --version   version for depthspace") {
		t.Errorf("--help does not list -v, --version:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"--version", "--help"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage:") {
		t.Errorf("--version --help: exit %d, want the help, got %q", code, out.String())
	}
}
