package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportToClosedPipe: a compare report or a batch's --json records
// whose pipe is closed are an error, exit 2 with one line (SPEC: a report
// that cannot be written), not a death by SIGPIPE (141, what a filter's
// output takes) that a script reads as "killed".
func TestReportToClosedPipe(t *testing.T) {
	dir := t.TempDir()
	for _, side := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, side), 0o755); err != nil {
			t.Fatal(err)
		}
		vals := make([]byte, 2<<20) // a report far larger than a pipe's buffer
		for i := range vals {
			if side == "b" && i%2 == 0 {
				vals[i] = 1
			}
		}
		writeInt16Npy(t, filepath.Join(dir, side, "x.npy"), vals...)
	}
	for _, args := range [][]string{
		{"compare", "--max-report", "1000000", filepath.Join(dir, "a", "x.npy"), filepath.Join(dir, "b", "x.npy")},
		{"convert", "--json", "--out-dir", filepath.Join(dir, "out"), filepath.Join(dir, "a")},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // nobody reads: the first write fails
		cmd := exec.Command(depthspaceBin(t), args...)
		cmd.Env = quickExit()
		cmd.Stdout = w
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cmd.Run()
		w.Close()
		code := cmd.ProcessState.ExitCode()
		if code != 2 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "broken pipe") {
			t.Errorf("%s to a closed pipe: exit %d (%s), stderr %q; want exit 2 and one line", args[0], code, cmd.ProcessState, stderr.String())
		}
	}
}
