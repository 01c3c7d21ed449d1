package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// defaultIOJobs is how many object transfers a run keeps in flight by
// default: enough to hide a remote region's round trips behind each
// other (docs/objects.md, "Objects in flight", says how it was chosen).
const defaultIOJobs = 16

// objectFlags are the flags of runs that name s3:// URLs, on every
// command that reads tensors (inputFlags.register).
func objectFlags(fl *pflag.FlagSet) {
	fl.BoolVar(&fileio.ObjectOptions.Anonymous, "no-sign-request", false, "s3://: send requests unsigned, to read a public bucket without credentials (as the AWS CLI's flag)")
	fl.IntVar(&fileio.ObjectOptions.Transfers, "io-jobs", defaultIOJobs, "s3://: files a batch keeps in flight (`N`), downloading, computing or uploading; apart from -j, which counts CPU threads")
}

// withoutBatch rewrites --io-jobs's help for a command that has no
// batch (info, compare): the flag is taken, as on every command that
// reads tensors, and checked, but only a batch keeps files in flight.
func withoutBatch(fl *pflag.FlagSet) {
	fl.Lookup("io-jobs").Usage = "s3://: the files a batch (--out-dir) keeps in flight (`N`); taken here, as on every command that reads tensors, and unused: this command has no batch"
}

// checkObjectFlags refuses values the object flags cannot mean: no file
// in flight would be no batch at all, and quietly taking -j instead
// would hide the mistake.
func checkObjectFlags() error {
	if n := fileio.ObjectOptions.Transfers; n < 1 {
		return fmt.Errorf("--io-jobs %d must be at least 1", n)
	}
	return nil
}
