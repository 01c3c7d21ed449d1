package compare

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/pipeline"
)

// testdata/runs3.json was written with numpy, base64 and json as
// Polygraphy's serde.py writes RunResults: three runners of two
// iterations each; tf-runner-N0's second iteration differs by 0.5 in one
// element of out0.
func TestRunsEveryRunnerAgainstTheFirst(t *testing.T) {
	j := Job{A: pipeline.Source{Path: "testdata/runs3.json"}, Options: Options{MaxReport: 10, Threads: 2}}
	rep, err := Runs(j)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Equal || len(rep.Pairs) != 2 || strings.Join(rep.Runs, ",") != "onnxrt-runner-N0,trt-runner-N0,tf-runner-N0" {
		t.Fatalf("runs %v, %d pairs, equal %v", rep.Runs, len(rep.Pairs), rep.Equal)
	}
	trt, tf := rep.Pairs[0], rep.Pairs[1]
	if !trt.Equal || tf.Equal {
		t.Errorf("trt equal %v (want true), tf equal %v (want false)", trt.Equal, tf.Equal)
	}
	// Iteration by iteration: the names within a run carry the iteration.
	if got := strings.Join(tf.names, ","); got != "0/out0,0/cls,1/out0,1/cls" {
		t.Errorf("member pairs %s", got)
	}
	for i, m := range tf.Members {
		if want := tf.names[i] != "1/out0"; m.Equal != want {
			t.Errorf("tf %s: equal %v, want %v", tf.names[i], m.Equal, want)
		}
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(text.String(), "runs of testdata/runs3.json differ: tf-runner-N0 differs from onnxrt-runner-N0 (1 of 2 runs checked)\n") {
		t.Errorf("text ends:\n%s", text.String())
	}

	// Tolerances as with two files.
	j.ATol = 0.6
	j.Tolerant = true
	if rep, err := Runs(j); err != nil || !rep.Equal {
		t.Errorf("atol 0.6: equal %v, %v", rep != nil && rep.Equal, err)
	}

	// --member picks within the runs.
	j.ATol, j.Tolerant = 0, false
	j.A.Members = []string{"*/*/cls"}
	rep, err = Runs(j)
	if err != nil || !rep.Equal || len(rep.Pairs[1].Members) != 2 {
		t.Errorf("--member */*/cls: %v, %v", rep, err)
	}
	// Or by the names the runs share, as the report gives them.
	j.A.Members = []string{"*/cls"}
	if rep, err = Runs(j); err != nil || !rep.Equal || len(rep.Pairs[1].Members) != 2 {
		t.Errorf("--member */cls: %v, %v", rep, err)
	}
	j.A.Members = []string{"1/out0"}
	if rep, err = Runs(j); err != nil || rep.Equal || len(rep.Pairs[1].Members) != 1 {
		t.Errorf("--member 1/out0: %v, %v", rep, err)
	}
	j.A.Members = []string{"nothing"}
	if _, err = Runs(j); err == nil || !strings.Contains(err.Error(), "matches none of the runs' members (0/out0, 0/cls, 1/out0, 1/cls)") {
		t.Errorf("--member nothing: %v", err)
	}
}

func TestRunsJUnit(t *testing.T) {
	j := Job{A: pipeline.Source{Path: "testdata/runs3.json"}, Options: Options{MaxReport: 10, Threads: 1}}
	rep, err := Runs(j)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	run := JUnitRun{Job: j, Start: junitStart, Elapsed: time.Second, Hostname: "ci-runner"}
	if err := WriteJUnit(&b, run, rep, rep.Equal, nil); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{`tests="8" failures="1" errors="0"`, `<testcase name="tf-runner-N0: 1/out0"`, `<testcase name="trt-runner-N0: 0/cls"`, `name="depthspace compare testdata/runs3.json"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("no %s in\n%s", want, doc)
		}
	}
	validateJUnit(t, b.Bytes())
}

func TestRunsNotAFileOfRuns(t *testing.T) {
	dir := t.TempDir()
	writeNpz(t, dir+"/a.npz", []string{"x", "y"}, [][]float64{{1}, {2}})
	_, err := Runs(Job{A: pipeline.Source{Path: dir + "/a.npz"}, Options: Options{Threads: 1}})
	if err == nil || !strings.Contains(err.Error(), "holds 2 members and no runs") {
		t.Errorf("npz: %v", err)
	}
}
