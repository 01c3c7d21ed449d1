package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeadcodeElimination fails when the program links
// reflect.Value.MethodByName (or Method), as text/template's executor
// does: the linker then keeps every exported method of every reachable
// type, whether called or not. One cobra Set*Template call did that: the
// binary went from 9.3 to 11.2 MB, and every run pays for the size at
// start (docs/performance.md). cobra's own test of the same
// (TestDeadcodeElimination in cobra_test.go) is the model.
func TestDeadcodeElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	bin := filepath.Join(t.TempDir(), "depthspace")
	goBuild(t, bin) // symbols kept: no -s
	checkDeadcode(t, bin)
}

// checkDeadcode fails the test if the binary bin has reflect's method
// lookups by name or index in its symbol table.
func checkDeadcode(t *testing.T, bin string) {
	t.Helper()
	out, err := exec.Command(goTool(t), "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		switch f[len(f)-1] {
		case "reflect.Value.MethodByName", "reflect.(*Value).MethodByName", "reflect.Value.Method", "reflect.(*Value).Method":
			t.Errorf("%s links %s: the linker keeps every exported method (who calls it: go build -ldflags=-dumpdep . 2>&1 | grep -B1 MethodByName)", filepath.Base(bin), f[len(f)-1])
		}
	}
}
