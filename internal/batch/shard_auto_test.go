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
