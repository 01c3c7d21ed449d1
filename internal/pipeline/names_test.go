package pipeline

import (
	"errors"
	"testing"
)

// TestNamesInErrorLines: a path in a PathError's line and member names
// in a list are escaped as %q escapes when they hold what would break
// the line or reach the terminal; an empty member name is seen as "".
func TestNamesInErrorLines(t *testing.T) {
	e := &PathError{Path: "in/x\ny\x1b[31m\xff.npy", Err: errors.New("bad")}
	if got, want := e.Error(), `in/x\ny\x1b[31m\xff.npy: bad`; got != want {
		t.Errorf("PathError: %q, want %q", got, want)
	}
	if got, want := shownNames([]string{"a", "", "b\nc", "d e"}), `a, "", "b\nc", d e`; got != want {
		t.Errorf("shownNames: %q, want %q", got, want)
	}
}
