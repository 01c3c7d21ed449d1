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

// ShardFromSlurm reads K and N of this task of a Slurm job array,
// K = (ID − MIN) / STEP and N = COUNT, so that arrays numbered from 0
// (--array=0-15), from 1 (--array=1-16) or with a step (--array=0-30:2)
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

// ShardAutoValue says whether a --shard value asks for the scheduler's
// numbering, "auto" or "auto/N", rather than giving K/N.
func ShardAutoValue(s string) bool {
	head, _, _ := strings.Cut(strings.TrimSpace(s), "/")
	return strings.EqualFold(strings.TrimSpace(head), "auto")
}

// ShardAuto reads --shard auto and --shard auto/N: K and N of this task
// of a job array, from the variables its scheduler sets, and the
// variables it read ("from", shown in the summary).
//
// "auto" reads Slurm, AWS Batch, Google Cloud Batch and Grid Engine.
// Exactly one of them must have set its variables: a task that sees two
// (a job submitted from inside another scheduler's task inherits its
// environment) is refused, because taking the wrong one would do some
// files twice and others never, with every task exiting 0.
//
// "auto/N" is a Kubernetes Indexed Job: Kubernetes sets the index
// (JOB_COMPLETION_INDEX) but not the count, which the Job's spec
// (completions) holds and the flag repeats. Only that variable is read.
func ShardAuto(value string, getenv func(string) string) (Shard, string, error) {
	_, count, isK8s := strings.Cut(strings.TrimSpace(value), "/")
	if isK8s {
		return shardFromIndexedJob(value, strings.TrimSpace(count), getenv)
	}
	var found []scheduler
	for _, s := range schedulers {
		if s.present(getenv) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 1:
		return found[0].read(getenv)
	case 0:
		var looked []string
		for _, s := range schedulers {
			looked = append(looked, s.vars[0])
		}
		if v := strings.TrimSpace(getenv(indexedJobVar)); v != "" {
			return Shard{}, "", fmt.Errorf("--shard auto: %s=%s is a Kubernetes Indexed Job's index, which comes without the count: give --shard auto/N, N the Job's completions", indexedJobVar, v)
		}
		return Shard{}, "", fmt.Errorf("--shard auto: not a task of a job array: none of %s is set (Slurm, AWS Batch, Google Cloud Batch, Grid Engine); in a Kubernetes Indexed Job give --shard auto/N, elsewhere --shard K/N", strings.Join(looked, ", "))
	}
	var names []string
	for _, s := range found {
		names = append(names, s.name+" ("+s.set(getenv)+")")
	}
	return Shard{}, "", fmt.Errorf("--shard auto: variables of more than one scheduler are set, %s: not guessing which numbers this task; give --shard K/N", strings.Join(names, " and "))
}

// scheduler is a job array system --shard auto reads.
type scheduler struct {
	name string
	vars []string // the variables it sets in an array's tasks, the index first
	read func(getenv func(string) string) (Shard, string, error)
}

var schedulers = []scheduler{
	{"Slurm", []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT"}, ShardFromSlurm},
	{"AWS Batch", []string{"AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE"}, shardFromAWSBatch},
	{"Google Cloud Batch", []string{"BATCH_TASK_INDEX", "BATCH_TASK_COUNT"}, shardFromGoogleBatch},
	{"Grid Engine", sgeArrayVars, shardFromGridEngine},
}

// present: any of its variables is set. Grid Engine sets its own to
// "undefined" in a job that is not an array.
func (s scheduler) present(getenv func(string) string) bool {
	return s.set(getenv) != ""
}

// set lists its variables that are set, NAME=value.
func (s scheduler) set(getenv func(string) string) string {
	var kv []string
	for _, name := range s.vars {
		if v := strings.TrimSpace(getenv(name)); v != "" && v != "undefined" {
			kv = append(kv, name+"="+v)
		}
	}
	return strings.Join(kv, " ")
}

// wholeNumbers reads scheduler who's variables names as whole numbers
// (≥ 0), each of which must be set.
func wholeNumbers(getenv func(string) string, who string, names ...string) ([]int, error) {
	var missing []string
	vals := make([]int, len(names))
	for i, name := range names {
		s := strings.TrimSpace(getenv(name))
		if s == "" || s == "undefined" {
			missing = append(missing, name)
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--shard auto: %s: %s=%q is not a whole number", who, name, s)
		}
		vals[i] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("--shard auto: %s: %s not set", who, strings.Join(missing, ", "))
	}
	return vals, nil
}

// zeroBased is K and N of a scheduler that numbers its tasks 0…N−1 and
// says N.
func zeroBased(getenv func(string) string, who, index, count, from string) (Shard, string, error) {
	v, err := wholeNumbers(getenv, who, index, count)
	if err != nil {
		return Shard{}, "", err
	}
	k, n := v[0], v[1]
	from = fmt.Sprintf(from, k, n)
	switch {
	case n < 1:
		return Shard{}, "", fmt.Errorf("--shard auto: %s: the count must be at least 1", from)
	case k >= n:
		return Shard{}, "", fmt.Errorf("--shard auto: %s: the index must be below the count", from)
	}
	return Shard{K: k, N: n}, from, nil
}

// shardFromAWSBatch: an AWS Batch array job's child numbers itself
// 0…SIZE−1 (AWS Batch User Guide, "Job environment variables").
func shardFromAWSBatch(getenv func(string) string) (Shard, string, error) {
	return zeroBased(getenv, "AWS Batch", "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE", "AWS_BATCH_JOB_ARRAY_INDEX=%d SIZE=%d")
}

// shardFromGoogleBatch: the tasks of a Google Cloud Batch task group are
// numbered 0…COUNT−1.
func shardFromGoogleBatch(getenv func(string) string) (Shard, string, error) {
	return zeroBased(getenv, "Google Cloud Batch", "BATCH_TASK_INDEX", "BATCH_TASK_COUNT", "BATCH_TASK_INDEX=%d COUNT=%d")
}

// sgeArrayVars are those Grid Engine sets in the tasks of qsub -t
// FIRST-LAST:STEPSIZE, numbered from 1 by default.
var sgeArrayVars = []string{"SGE_TASK_ID", "SGE_TASK_FIRST", "SGE_TASK_LAST", "SGE_TASK_STEPSIZE"}

// shardFromGridEngine: K = (ID − FIRST) / STEPSIZE, and N the number of
// tasks from FIRST to LAST, LAST included when the step reaches it
// (qsub -t 1-10:4 runs 1, 5 and 9).
func shardFromGridEngine(getenv func(string) string) (Shard, string, error) {
	v, err := wholeNumbers(getenv, "Grid Engine", sgeArrayVars...)
	if err != nil {
		return Shard{}, "", err
	}
	id, first, last, step := v[0], v[1], v[2], v[3]
	from := fmt.Sprintf("SGE_TASK_ID=%d FIRST=%d LAST=%d STEPSIZE=%d", id, first, last, step)
	bad := func(why string) (Shard, string, error) {
		return Shard{}, "", fmt.Errorf("--shard auto: %s: %s", from, why)
	}
	switch {
	case step < 1:
		return bad("STEPSIZE must be at least 1")
	case last < first:
		return bad("LAST is below FIRST")
	case id < first || id > last:
		return bad("the task ID is not from FIRST to LAST")
	case (id-first)%step != 0:
		return bad("the task ID is not FIRST plus a multiple of STEPSIZE")
	}
	return Shard{K: (id - first) / step, N: (last-first)/step + 1}, from, nil
}

// indexedJobVar is the index Kubernetes gives each pod of a Job with
// completionMode: Indexed, 0…completions−1.
const indexedJobVar = "JOB_COMPLETION_INDEX"

func shardFromIndexedJob(value, count string, getenv func(string) string) (Shard, string, error) {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return Shard{}, "", fmt.Errorf("--shard %q: want auto/N, N the Job's completions (at least 1)", value)
	}
	s := strings.TrimSpace(getenv(indexedJobVar))
	if s == "" {
		return Shard{}, "", fmt.Errorf("--shard %s: %s not set (a Kubernetes Job with completionMode: Indexed sets it)", value, indexedJobVar)
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 {
		return Shard{}, "", fmt.Errorf("--shard %s: %s=%q is not a whole number", value, indexedJobVar, s)
	}
	if k >= n {
		return Shard{}, "", fmt.Errorf("--shard %s: %s=%d is not below N=%d: N must be the Job's completions", value, indexedJobVar, k, n)
	}
	return Shard{K: k, N: n}, fmt.Sprintf("%s=%d", indexedJobVar, k), nil
}
