package batch

import (
	"strconv"
	"strings"
	"testing"
)

// slurmEnv is the environment Slurm gives task id of --array=lo-hi:step.
func slurmEnv(id, lo, hi, step int) map[string]string {
	count := (hi-lo)/step + 1
	return map[string]string{
		"SLURM_ARRAY_TASK_ID":    strconv.Itoa(id),
		"SLURM_ARRAY_TASK_MIN":   strconv.Itoa(lo),
		"SLURM_ARRAY_TASK_MAX":   strconv.Itoa(hi),
		"SLURM_ARRAY_TASK_STEP":  strconv.Itoa(step),
		"SLURM_ARRAY_TASK_COUNT": strconv.Itoa(count),
	}
}

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestShardFromSlurm(t *testing.T) {
	for _, c := range []struct {
		id, lo, hi, step int
		want             Shard
	}{
		{0, 0, 15, 1, Shard{0, 16}},
		{15, 0, 15, 1, Shard{15, 16}},
		{1, 1, 16, 1, Shard{0, 16}}, // --array=1-16
		{16, 1, 16, 1, Shard{15, 16}},
		{0, 0, 30, 2, Shard{0, 16}}, // --array=0-30:2
		{30, 0, 30, 2, Shard{15, 16}},
		{14, 0, 30, 2, Shard{7, 16}},
		{7, 7, 7, 1, Shard{0, 1}},  // one task
		{9, 3, 12, 3, Shard{2, 4}}, // --array=3-12:3
	} {
		got, from, err := ShardFromSlurm(getenv(slurmEnv(c.id, c.lo, c.hi, c.step)))
		if err != nil || got != c.want {
			t.Errorf("id %d of %d-%d:%d: %v, %v; want %v", c.id, c.lo, c.hi, c.step, got, err, c.want)
		}
		if !strings.Contains(from, "SLURM_ARRAY_TASK_ID="+strconv.Itoa(c.id)) {
			t.Errorf("from = %q", from)
		}
	}
	// Without MAX (older Slurm, or a hand-made environment) K is still known.
	env := slurmEnv(5, 1, 8, 2)
	delete(env, "SLURM_ARRAY_TASK_MAX")
	if got, _, err := ShardFromSlurm(getenv(env)); err != nil || got != (Shard{2, 4}) {
		t.Errorf("without MAX: %v, %v", got, err)
	}
}

func TestShardFromSlurmRefuses(t *testing.T) {
	none := map[string]string{}
	_, _, err := ShardFromSlurm(getenv(none))
	if err == nil || err.Error() != "--shard auto: not a Slurm job array task: SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP, SLURM_ARRAY_TASK_COUNT not set (submit with sbatch --array, or give --shard K/N)" {
		t.Errorf("no environment: %v", err)
	}
	// A plain job (not an array) has SLURM_JOB_ID but none of these.
	partial := slurmEnv(2, 0, 3, 1)
	delete(partial, "SLURM_ARRAY_TASK_COUNT")
	if _, _, err := ShardFromSlurm(getenv(partial)); err == nil || !strings.Contains(err.Error(), "SLURM_ARRAY_TASK_COUNT not set") || strings.Contains(err.Error(), "TASK_ID,") {
		t.Errorf("one missing: %v", err)
	}
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"below MIN":    {slurmEnv(0, 1, 4, 1), "below MIN"},
		"above MAX":    {slurmEnv(5, 1, 4, 1), "above MAX"},
		"off the step": {slurmEnv(3, 0, 30, 2), "not MIN plus a multiple of STEP"},
		"list":         {map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, "not one range"},
		"past COUNT":   {map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "4"}, "past MIN"},
		"step 0":       {map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "0", "SLURM_ARRAY_TASK_COUNT": "4"}, "STEP must be at least 1"},
		"count 0":      {map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "0"}, "COUNT must be at least 1"},
		"not a number": {map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "4"}, `SLURM_ARRAY_TASK_ID="x" is not a whole number`},
		"negative":     {map[string]string{"SLURM_ARRAY_TASK_ID": "-1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "4"}, "not a whole number"},
	} {
		if s, _, err := ShardFromSlurm(getenv(c.env)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, %v; want an error with %q", name, s, err, c.want)
		}
	}
}

// Every task of an array, however numbered, gets a different K, and the
// shards together cover every item of lists of 0…100 items exactly once.
func TestSlurmArraysCoverTheList(t *testing.T) {
	for tasks := 1; tasks <= 8; tasks++ {
		for _, shape := range []struct{ lo, step int }{{0, 1}, {1, 1}, {0, 2}, {1, 3}, {10, 5}} {
			hi := shape.lo + (tasks-1)*shape.step
			for size := 0; size <= 100; size++ {
				seen := make([]int, size)
				for id := shape.lo; id <= hi; id += shape.step {
					s, _, err := ShardFromSlurm(getenv(slurmEnv(id, shape.lo, hi, shape.step)))
					if err != nil {
						t.Fatalf("--array=%d-%d:%d task %d: %v", shape.lo, hi, shape.step, id, err)
					}
					for i := 0; i < size; i++ {
						if s.Owns(i) {
							seen[i]++
						}
					}
				}
				for i, n := range seen {
					if n != 1 {
						t.Fatalf("--array=%d-%d:%d over %d items: item %d done %d times", shape.lo, hi, shape.step, size, i, n)
					}
				}
			}
		}
	}
}

func TestShardAutoValue(t *testing.T) {
	for s, want := range map[string]bool{
		"auto": true, "AUTO": true, " auto ": true, "auto/8": true, "auto/": true, "Auto/x": true,
		"3/16": false, "": false, "automatic": false, "autox/2": false,
	} {
		if got := ShardAutoValue(s); got != want {
			t.Errorf("ShardAutoValue(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestShardAutoSchedulers(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want Shard
		from string
	}{
		{"Slurm", slurmEnv(6, 0, 6, 2), Shard{3, 4}, "SLURM_ARRAY_TASK_ID=6 MIN=0 MAX=6 STEP=2 COUNT=4"},
		{"AWS Batch first", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "0", "AWS_BATCH_JOB_ARRAY_SIZE": "10"}, Shard{0, 10}, "AWS_BATCH_JOB_ARRAY_INDEX=0 SIZE=10"},
		{"AWS Batch last", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "9", "AWS_BATCH_JOB_ARRAY_SIZE": "10"}, Shard{9, 10}, "AWS_BATCH_JOB_ARRAY_INDEX=9 SIZE=10"},
		{"Google Cloud Batch", map[string]string{"BATCH_TASK_INDEX": "2", "BATCH_TASK_COUNT": "4"}, Shard{2, 4}, "BATCH_TASK_INDEX=2 COUNT=4"},
		{"Google Cloud Batch, one task", map[string]string{"BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "1"}, Shard{0, 1}, "BATCH_TASK_INDEX=0 COUNT=1"},
		// qsub -t 1-4: tasks 1…4.
		{"Grid Engine", sgeEnv("3", "1", "4", "1"), Shard{2, 4}, "SGE_TASK_ID=3 FIRST=1 LAST=4 STEPSIZE=1"},
		// qsub -t 1-10:4 runs 1, 5 and 9: 10 is never reached.
		{"Grid Engine, strided", sgeEnv("9", "1", "10", "4"), Shard{2, 3}, "SGE_TASK_ID=9 FIRST=1 LAST=10 STEPSIZE=4"},
		{"Grid Engine, strided to LAST", sgeEnv("10", "2", "10", "4"), Shard{2, 3}, "SGE_TASK_ID=10 FIRST=2 LAST=10 STEPSIZE=4"},
		// Grid Engine sets "undefined" outside an array: not a scheduler here.
		{"Grid Engine plain job beside AWS Batch", merge(sgeEnv("undefined", "undefined", "undefined", "undefined"),
			map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "2"}), Shard{1, 2}, "AWS_BATCH_JOB_ARRAY_INDEX=1 SIZE=2"},
		// An index without its count is not a scheduler for plain auto.
		{"Slurm in an Indexed Job's pod", merge(slurmEnv(2, 1, 2, 1), map[string]string{"JOB_COMPLETION_INDEX": "5"}), Shard{1, 2}, "SLURM_ARRAY_TASK_ID=2 MIN=1 MAX=2 STEP=1 COUNT=2"},
	} {
		got, from, err := ShardAuto("auto", getenv(c.env))
		if err != nil || got != c.want || from != c.from {
			t.Errorf("%s: %v from %q, %v; want %v from %q", c.name, got, from, err, c.want, c.from)
		}
	}
}

func sgeEnv(id, first, last, step string) map[string]string {
	return map[string]string{"SGE_TASK_ID": id, "SGE_TASK_FIRST": first, "SGE_TASK_LAST": last, "SGE_TASK_STEPSIZE": step}
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func TestShardAutoIndexedJob(t *testing.T) {
	for _, c := range []struct {
		value, index string
		want         Shard
	}{
		{"auto/8", "0", Shard{0, 8}},
		{"auto/8", "7", Shard{7, 8}},
		{"AUTO/ 1", "0", Shard{0, 1}},
	} {
		got, from, err := ShardAuto(c.value, getenv(map[string]string{"JOB_COMPLETION_INDEX": c.index}))
		if err != nil || got != c.want || from != "JOB_COMPLETION_INDEX="+c.index {
			t.Errorf("%s with index %s: %v from %q, %v; want %v", c.value, c.index, got, from, err, c.want)
		}
	}
	// auto/N is the Indexed Job's alone: another scheduler's variables
	// beside it are not read.
	env := merge(slurmEnv(1, 1, 4, 1), map[string]string{"JOB_COMPLETION_INDEX": "3"})
	if got, _, err := ShardAuto("auto/5", getenv(env)); err != nil || got != (Shard{3, 5}) {
		t.Errorf("auto/5 beside Slurm: %v, %v", got, err)
	}
}

func TestShardAutoRefuses(t *testing.T) {
	for _, c := range []struct {
		name, value string
		env         map[string]string
		want        string // the whole error
	}{
		{"nothing", "auto", nil, "--shard auto: not a task of a job array: none of SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX, BATCH_TASK_INDEX, SGE_TASK_ID is set (Slurm, AWS Batch, Google Cloud Batch, Grid Engine); in a Kubernetes Indexed Job give --shard auto/N, elsewhere --shard K/N"},
		{"Grid Engine, not an array", "auto", sgeEnv("undefined", "undefined", "undefined", "undefined"), "--shard auto: not a task of a job array: none of SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX, BATCH_TASK_INDEX, SGE_TASK_ID is set (Slurm, AWS Batch, Google Cloud Batch, Grid Engine); in a Kubernetes Indexed Job give --shard auto/N, elsewhere --shard K/N"},
		{"Indexed Job without N", "auto", map[string]string{"JOB_COMPLETION_INDEX": "3"}, "--shard auto: JOB_COMPLETION_INDEX=3 is a Kubernetes Indexed Job's index, which comes without the count: give --shard auto/N, N the Job's completions"},
		{"two schedulers", "auto", merge(slurmEnv(1, 1, 2, 1), map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "0", "AWS_BATCH_JOB_ARRAY_SIZE": "3"}),
			"--shard auto: variables of more than one scheduler are set, Slurm (SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=2 SLURM_ARRAY_TASK_STEP=1 SLURM_ARRAY_TASK_COUNT=2) and AWS Batch (AWS_BATCH_JOB_ARRAY_INDEX=0 AWS_BATCH_JOB_ARRAY_SIZE=3): not guessing which numbers this task; give --shard K/N"},
		{"AWS Batch without SIZE", "auto", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "1"}, "--shard auto: AWS Batch: AWS_BATCH_JOB_ARRAY_SIZE not set"},
		{"AWS Batch index past SIZE", "auto", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "4", "AWS_BATCH_JOB_ARRAY_SIZE": "4"}, "--shard auto: AWS_BATCH_JOB_ARRAY_INDEX=4 SIZE=4: the index must be below the count"},
		{"Google Batch count 0", "auto", map[string]string{"BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "0"}, "--shard auto: BATCH_TASK_INDEX=0 COUNT=0: the count must be at least 1"},
		{"Google Batch not a number", "auto", map[string]string{"BATCH_TASK_INDEX": "two", "BATCH_TASK_COUNT": "4"}, `--shard auto: Google Cloud Batch: BATCH_TASK_INDEX="two" is not a whole number`},
		{"Grid Engine off the step", "auto", sgeEnv("4", "1", "10", "4"), "--shard auto: SGE_TASK_ID=4 FIRST=1 LAST=10 STEPSIZE=4: the task ID is not FIRST plus a multiple of STEPSIZE"},
		{"Grid Engine past LAST", "auto", sgeEnv("11", "1", "10", "1"), "--shard auto: SGE_TASK_ID=11 FIRST=1 LAST=10 STEPSIZE=1: the task ID is not from FIRST to LAST"},
		{"Grid Engine below FIRST", "auto", sgeEnv("1", "2", "10", "1"), "--shard auto: SGE_TASK_ID=1 FIRST=2 LAST=10 STEPSIZE=1: the task ID is not from FIRST to LAST"},
		{"Grid Engine step 0", "auto", sgeEnv("1", "1", "10", "0"), "--shard auto: SGE_TASK_ID=1 FIRST=1 LAST=10 STEPSIZE=0: STEPSIZE must be at least 1"},
		{"Grid Engine LAST below FIRST", "auto", sgeEnv("5", "5", "4", "1"), "--shard auto: SGE_TASK_ID=5 FIRST=5 LAST=4 STEPSIZE=1: LAST is below FIRST"},
		{"Grid Engine partly undefined", "auto", sgeEnv("3", "1", "undefined", "1"), "--shard auto: Grid Engine: SGE_TASK_LAST not set"},
		{"Indexed Job, no index", "auto/4", nil, "--shard auto/4: JOB_COMPLETION_INDEX not set (a Kubernetes Job with completionMode: Indexed sets it)"},
		{"Indexed Job, index past N", "auto/4", map[string]string{"JOB_COMPLETION_INDEX": "4"}, "--shard auto/4: JOB_COMPLETION_INDEX=4 is not below N=4: N must be the Job's completions"},
		{"Indexed Job, bad index", "auto/4", map[string]string{"JOB_COMPLETION_INDEX": "-1"}, `--shard auto/4: JOB_COMPLETION_INDEX="-1" is not a whole number`},
		{"Indexed Job, N 0", "auto/0", map[string]string{"JOB_COMPLETION_INDEX": "0"}, `--shard "auto/0": want auto/N, N the Job's completions (at least 1)`},
		{"Indexed Job, no N", "auto/", map[string]string{"JOB_COMPLETION_INDEX": "0"}, `--shard "auto/": want auto/N, N the Job's completions (at least 1)`},
	} {
		s, _, err := ShardAuto(c.value, getenv(c.env))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, %v\nwant %s", c.name, s, err, c.want)
		}
	}
}

// Every task of an array of each scheduler gets a different K, and the
// shards together cover every item of lists of 0…60 items exactly once.
func TestAutoArraysCoverTheList(t *testing.T) {
	arrays := map[string]func(tasks int) []map[string]string{
		"AWS Batch": func(tasks int) (envs []map[string]string) {
			for i := 0; i < tasks; i++ {
				envs = append(envs, map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": strconv.Itoa(i), "AWS_BATCH_JOB_ARRAY_SIZE": strconv.Itoa(tasks)})
			}
			return envs
		},
		"Google Cloud Batch": func(tasks int) (envs []map[string]string) {
			for i := 0; i < tasks; i++ {
				envs = append(envs, map[string]string{"BATCH_TASK_INDEX": strconv.Itoa(i), "BATCH_TASK_COUNT": strconv.Itoa(tasks)})
			}
			return envs
		},
		// qsub -t 3-LAST:2 with LAST one past the last task run, as
		// Grid Engine allows.
		"Grid Engine": func(tasks int) (envs []map[string]string) {
			last := 3 + (tasks-1)*2 + 1
			for id := 3; id <= last; id += 2 {
				envs = append(envs, sgeEnv(strconv.Itoa(id), "3", strconv.Itoa(last), "2"))
			}
			return envs
		},
	}
	for name, array := range arrays {
		for tasks := 1; tasks <= 6; tasks++ {
			envs := array(tasks)
			if len(envs) != tasks {
				t.Fatalf("%s: %d environments for %d tasks", name, len(envs), tasks)
			}
			for size := 0; size <= 60; size++ {
				seen := make([]int, size)
				for _, env := range envs {
					s, _, err := ShardAuto("auto", getenv(env))
					if err != nil {
						t.Fatalf("%s, %d tasks: %v", name, tasks, err)
					}
					if s.N != tasks {
						t.Fatalf("%s, %d tasks: N = %d", name, tasks, s.N)
					}
					for i := 0; i < size; i++ {
						if s.Owns(i) {
							seen[i]++
						}
					}
				}
				for i, n := range seen {
					if n != 1 {
						t.Fatalf("%s, %d tasks over %d items: item %d done %d times", name, tasks, size, i, n)
					}
				}
			}
		}
	}
}
