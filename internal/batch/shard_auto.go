package batch

import (
	"fmt"
	"strconv"
	"strings"
)

// slurmArrayVars are the variables Slurm sets in every task of a job
// array (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES"). MAX is used only to
// check the others.
var slurmArrayVars = []string{
	"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT",
}

// ShardFromSlurm reads --shard auto: K and N of this task of a Slurm job
// array, K = (ID − MIN) / STEP and N = COUNT, so that arrays numbered from
// 0 (--array=0-15), from 1 (--array=1-16) or with a step (--array=0-30:2)
// all give K = 0…N−1. getenv is os.Getenv in the program, a map in tests.
//
// An array that is not one arithmetic range (--array=1,3,7) has no K
// that Slurm's variables determine: Slurm then sets STEP to 1 while
// MIN + (COUNT−1)·STEP ≠ MAX, and that is refused rather than guessed,
// like any other values that disagree with each other.
func ShardFromSlurm(getenv func(string) string) (Shard, string, error) {
	var missing []string
	vals := map[string]int{}
	for _, name := range append(slurmArrayVars, "SLURM_ARRAY_TASK_MAX") {
		s := strings.TrimSpace(getenv(name))
		if s == "" {
			if name != "SLURM_ARRAY_TASK_MAX" {
				missing = append(missing, name)
			}
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return Shard{}, "", fmt.Errorf("--shard auto: %s=%q is not a whole number", name, s)
		}
		vals[name] = v
	}
	if len(missing) > 0 {
		return Shard{}, "", fmt.Errorf("--shard auto: not a Slurm job array task: %s not set (submit with sbatch --array, or give --shard K/N)", strings.Join(missing, ", "))
	}
	id, lo, step, count := vals["SLURM_ARRAY_TASK_ID"], vals["SLURM_ARRAY_TASK_MIN"], vals["SLURM_ARRAY_TASK_STEP"], vals["SLURM_ARRAY_TASK_COUNT"]
	from := fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d MIN=%d STEP=%d COUNT=%d", id, lo, step, count)
	hi, haveMax := vals["SLURM_ARRAY_TASK_MAX"]
	if haveMax {
		from = fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d MIN=%d MAX=%d STEP=%d COUNT=%d", id, lo, hi, step, count)
	}
	bad := func(why string) (Shard, string, error) {
		return Shard{}, "", fmt.Errorf("--shard auto: %s: %s", from, why)
	}
	switch {
	case step < 1:
		return bad("STEP must be at least 1")
	case count < 1:
		return bad("COUNT must be at least 1")
	case haveMax && lo+(count-1)*step != hi:
		return bad("MIN + (COUNT−1)·STEP is not MAX: the array is not one range with a step (such as --array=1,3,7); give --shard K/N")
	case id < lo:
		return bad("the task ID is below MIN")
	case haveMax && id > hi:
		return bad("the task ID is above MAX")
	case (id-lo)%step != 0:
		return bad("the task ID is not MIN plus a multiple of STEP")
	case (id-lo)/step >= count:
		return bad("the task ID is past MIN + (COUNT−1)·STEP")
	}
	return Shard{K: (id - lo) / step, N: count}, from, nil
}
