package batch

import (
	"io"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// collector is the collector's percentage and memory limit now.
func collector() (percent int, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), debug.SetMemoryLimit(-1)
}

// collectorSeen is a --json stream that notes the collector's settings
// at the first record, written while the batch runs.
type collectorSeen struct {
	seen    bool
	percent int
	limit   int64
}

func (c *collectorSeen) Write(p []byte) (int, error) {
	if !c.seen {
		c.seen = true
		c.percent, c.limit = collector()
	}
	return len(p), nil
}

// A batch paces the collector by gcRoom (the percentage off, a memory
// limit) while it runs and puts both back after; GOGC or GOMEMLIMIT in
// the environment rule instead.
func TestRunPacesCollector(t *testing.T) {
	chdir(t)
	writeNpy(t, "d/a.npy", 1, 1, 4, 4)
	percent, limit := collector()
	if limit != math.MaxInt64 {
		t.Fatalf("a memory limit of %d before the batch", limit)
	}
	for _, env := range []struct{ gogc, gomemlimit string }{{"", ""}, {"100", ""}, {"", "1GiB"}} {
		t.Setenv("GOGC", env.gogc)
		t.Setenv("GOMEMLIMIT", env.gomemlimit)
		seen := &collectorSeen{}
		if _, err := Run(Options{Inputs: []string{"d"}, OutDir: "out" + env.gogc + env.gomemlimit, Job: s2d(t), Threads: 1, Stderr: io.Discard, JSON: seen}); err != nil {
			t.Fatal(err)
		}
		paced := env.gogc == "" && env.gomemlimit == ""
		switch {
		case !seen.seen:
			t.Fatalf("GOGC=%q GOMEMLIMIT=%q: no record written", env.gogc, env.gomemlimit)
		case paced && (seen.percent != -1 || seen.limit < gcRoom || seen.limit == math.MaxInt64):
			t.Errorf("during the batch: GOGC %d, limit %d; want off and a limit of at least %d", seen.percent, seen.limit, gcRoom)
		case !paced && (seen.percent != percent || seen.limit != limit):
			t.Errorf("GOGC=%q GOMEMLIMIT=%q, during the batch: GOGC %d, limit %d; want %d and none", env.gogc, env.gomemlimit, seen.percent, seen.limit, percent)
		}
		if p, l := collector(); p != percent || l != limit {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q, after the batch: GOGC %d, limit %d; want %d and none", env.gogc, env.gomemlimit, p, l, percent)
		}
	}
}
