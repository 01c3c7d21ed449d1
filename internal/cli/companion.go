package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// Plain depthspace has no place but local files and standard input and
// output: S3's client (net/http, a TLS stack) made every run start 1.3×
// slower, S3 or not. A run naming an s3:// URL is handed, as git hands
// https:// to git-remote-https, to the companion program depthspace-s3
// (cmd/depthspace-s3: this command tree with S3 built in), which
// replaces this process (same pid, descriptors, signals and exit
// status). docs/objects.md says how to install it. A later place that
// needs its own client is one more row here and one more main.
var companions = []companion{
	{scheme: "s3://", program: "depthspace-s3"},
}

// companion is a program holding the place for URLs of scheme.
type companion struct {
	scheme, program string
}

// The hand-over's environment. companionEnv is the companion's path: a
// companion without the place says so instead of handing the run on
// again. versionEnv is the version of the depthspace handing over: a
// companion of another version refuses the run (checkHandOver), since
// its flags and messages would be another release's.
const (
	companionEnv = "DEPTHSPACE_COMPANION"
	versionEnv   = "DEPTHSPACE_VERSION"
)

// modulePath is where `go install` finds the programs.
const modulePath = "github.com/depthspace/depthspace"

// builtIn: this build has a place for URLs of scheme.
func builtIn(scheme string) bool { return fileio.PlaceOf(scheme) != nil }

// scanArgs is the argv scan that decides a hand-over: the companion the
// run needs (the first whose scheme has no place in this build, per
// builtIn, and that an argument or a flag's value names), the first URL
// of its scheme (for the error lines), and whether the run asks for help
// (-h, --help, the help command: help needs no place). c is nil when
// this build runs it alone.
func scanArgs(args []string, builtIn func(scheme string) bool) (c *companion, url string, help bool) {
	help = len(args) > 0 && args[0] == "help"
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			help = true
		}
	}
	for i := range companions {
		if builtIn(companions[i].scheme) {
			continue
		}
		if u := firstURL(args, companions[i].scheme); u != "" {
			return &companions[i], u, help
		}
	}
	return nil, "", help
}

// firstURL is the first URL of scheme that args name, as an argument or
// as a flag's value; "" for none.
func firstURL(args []string, scheme string) string {
	flags := true // before "--"
	for _, a := range args {
		if flags && a == "--" {
			flags = false
			continue
		}
		if i := urlAt(a, scheme, flags); i >= 0 {
			return a[i:]
		}
	}
	return ""
}

// urlAt is where in arg a URL of scheme starts: 0 for the URL itself, or
// with flags (arg may be a flag: it comes before "--") the start of a
// flag's value, after "=" (--out-dir=s3://…) or after a shorthand or a
// run of them (-os3://…, -o=s3://…, -qos3://…); -1 for none. A local path holding
// the scheme's text further on (./s3://x, -o./s3://x) is no URL.
func urlAt(arg, scheme string, flags bool) int {
	if hasPrefixFold(arg, scheme) {
		return 0
	}
	if !flags || len(arg) < 2 || arg[0] != '-' {
		return -1
	}
	if strings.HasPrefix(arg, "--") {
		if _, v, ok := strings.Cut(arg, "="); ok && hasPrefixFold(v, scheme) {
			return len(arg) - len(v)
		}
		return -1
	}
	for i := 1; i < len(arg) && isLetter(arg[i]); i++ {
		v := strings.TrimPrefix(arg[i+1:], "=") // -o=s3://…
		if hasPrefixFold(v, scheme) {
			return len(arg) - len(v)
		}
	}
	return -1
}

func isLetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// companionURL is the first URL of any companion's scheme that args
// name, built in or not; "" for none. Only such a run can have been
// handed over, or need a companion.
func companionURL(args []string) string {
	for _, c := range companions {
		if url := firstURL(args, c.scheme); url != "" {
			return url
		}
	}
	return ""
}

// checkHandOver refuses a run handed over (companionPath, the
// DEPTHSPACE_COMPANION its parent set, is not "") by a depthspace whose
// version, parentVersion, is not this program's: one line naming the URL
// the run was handed over for and both versions. A parent that set no
// version is older than this check, so of another version too. A
// companion run directly, with neither variable set, is a full program.
func checkHandOver(parentVersion, companionPath, url string) error {
	if companionPath == "" || sameVersion(parentVersion, versionString()) {
		return nil
	}
	parent, install := parentVersion, installLine(filepath.Base(companionPath), parentVersion)
	if parent == "" {
		parent, install = "an earlier one, which names none", "the version `depthspace --version` gives"
	}
	return fmt.Errorf("%s: %s is version %s and depthspace is version %s: a companion serves only its own version; install the same one: %s",
		url, filepath.Base(companionPath), versionString(), parent, install)
}

// sameVersion compares versions as the two ways of installing give them:
// a release build is stamped "1.2.3", go install of the module reports
// "v1.2.3".
func sameVersion(a, b string) bool {
	return strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v")
}

// installLine is the command that installs program at version: go install
// of the module at that version, or, for a build that is no module
// version (a source tree's "dev", or one with uncommitted changes), go
// install of the program's directory in that source tree.
func installLine(program, version string) string {
	v := strings.TrimPrefix(version, "v")
	if v == "" || v[0] < '0' || v[0] > '9' || strings.Contains(v, "+") {
		return "go install ./cmd/" + program + " in depthspace's source tree"
	}
	return "go install " + modulePath + "/cmd/" + program + "@v" + v
}

// runCompanion hands the run (args are os.Args) to c's program, found
// next to this executable (links resolved), else on PATH; url is the
// first URL that needs it. It returns only on failure: the exit status,
// the reason said on stderr.
func runCompanion(c *companion, url string, args []string, stderr io.Writer) int {
	if self := os.Getenv(companionEnv); self != "" {
		fmt.Fprintf(stderr, "depthspace: %s: %s was run for %s URLs but has no %s built in: install the companion with %s\n", url, self, c.scheme, c.scheme, installLine(c.program, versionString()))
		return exitError
	}
	path := findCompanion(c.program)
	if path == "" {
		if p := unrunnableCompanion(c.program); p != "" {
			fmt.Fprintf(stderr, "depthspace: %s: %s URLs need the companion program %s, and %s is not executable: make it so with chmod +x %s\n", url, c.scheme, c.program, p, p)
			return exitError
		}
		fmt.Fprintf(stderr, "depthspace: %s: %s URLs need the companion program %s, found neither next to depthspace nor on PATH: install it from the release archive, or with %s\n", url, c.scheme, c.program, installLine(c.program, versionString()))
		return exitError
	}
	env := append(os.Environ(), companionEnv+"="+path, versionEnv+"="+versionString())
	code, err := execProgram(path, append([]string{path}, args[1:]...), env)
	if err != nil {
		fmt.Fprintf(stderr, "depthspace: %s: running %s for %s URLs: %v\n", url, path, c.scheme, err)
		return exitError
	}
	return code
}

// findCompanion is the path of program next to this executable, else in
// an absolute directory of PATH; "" if neither.
func findCompanion(program string) string {
	for _, p := range companionPlaces(program) {
		if isProgram(p) {
			return p
		}
	}
	return ""
}

// unrunnableCompanion is the first of program's places holding a regular
// file that is not executable, or "": where no companion is found, that
// file is what the user installed, and what is wrong is its mode.
func unrunnableCompanion(program string) string {
	for _, p := range companionPlaces(program) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// companionPlaces are where program is looked for, in order: next to this
// executable (links resolved), then each absolute directory of PATH.
func companionPlaces(program string) []string {
	if runtime.GOOS == "windows" {
		program += ".exe"
	}
	var places []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		places = append(places, filepath.Join(filepath.Dir(exe), program))
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			// Not the current directory ("" or "."), nor one relative to
			// it ("bin"): exec.LookPath refuses those (exec.ErrDot), and
			// a run in someone's directory must not execute their file.
			continue
		}
		places = append(places, filepath.Join(dir, program))
	}
	return places
}

func isProgram(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0)
}
