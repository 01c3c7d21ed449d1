package cli

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"depthspace": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/scripts/*.txtar: each file is one scenario a
// user could type, with its inputs and expected outputs embedded.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("..", "..", "testdata", "scripts"),
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitcode,
			"cmpjson":  cmdCmpJSON,
			"hash":     cmdHash,
			"writenpy": cmdWriteNpy,
			"truncate": cmdTruncate,
			"mkst":     cmdMkSafetensors,
			"mknpz":    cmdMkNpz,
		},
		RequireExplicitExec: true,
		// Under -race every exiting process sleeps 1 s by default
		// (atexit_sleep_ms): that alone made these scripts take minutes.
		Setup: func(env *testscript.Env) error {
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
	})
}

// exitcode N PROG ARGS... runs PROG and checks its exit status is exactly N
// (SPEC: 0 success, 1 compare found a difference, 2 anything else). Its
// stdout and stderr are then available to the stdout/stderr commands.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}

// cmpjson [-dtype D] GOT WANT compares two JSON tensors by value: same
// shape, same dtype, same element bytes. WANT may be a bare nested array as
// printed in the seed pages; -dtype types it.
func cmdCmpJSON(ts *testscript.TestScript, neg bool, args []string) {
	var want *format.DType
	if len(args) > 2 && args[0] == "-dtype" {
		d, err := format.ParseDType(args[1])
		ts.Check(err)
		want = &d
		args = args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: cmpjson [-dtype D] got want")
	}
	read := func(name string, dt *format.DType) (format.Header, []byte) {
		h, b, err := json.DecodeJSON([]byte(ts.ReadFile(name)), dt)
		if err != nil {
			ts.Fatalf("%s: %v", name, err)
		}
		return h, b
	}
	gh, gb := read(args[0], nil)
	if want == nil {
		want = &gh.DType
	}
	wh, wb := read(args[1], want)
	same := format.ShapeString(gh.Shape) == format.ShapeString(wh.Shape) && gh.DType.SameLayout(wh.DType) && bytes.Equal(gb, wb)
	if same == neg {
		ts.Fatalf("%s (shape %s, %s) and %s (shape %s, %s) are %s",
			args[0], format.ShapeString(gh.Shape), gh.DType, args[1], format.ShapeString(wh.Shape), wh.DType,
			map[bool]string{true: "equal", false: "different"}[same])
	}
}

// hash FILE... > SUMS records SHA-256 sums; "hash -check SUMS" verifies
// that no input was modified by the commands in between.
func cmdHash(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 2 && args[0] == "-check" {
		for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[1])), "\n") {
			f := strings.Fields(line)
			if got := sum(ts, f[1]); got != f[0] {
				ts.Fatalf("%s was modified", f[1])
			}
		}
		return
	}
	var out strings.Builder
	for _, a := range args[:len(args)-1] {
		fmt.Fprintf(&out, "%s %s\n", sum(ts, a), a)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[len(args)-1]), []byte(out.String()), 0o644))
}

func sum(ts *testscript.TestScript, name string) string {
	b, err := os.ReadFile(ts.MkAbs(name))
	ts.Check(err)
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// writenpy FILE VERSION HEADER [DATA] writes an npy file with exactly the
// given header text (padded as numpy pads it) followed by DATA, where DATA
// is a decimal byte count of zero bytes: for hostile and odd headers.
func cmdWriteNpy(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: writenpy file version header [databytes]")
	}
	major, _ := strconv.Atoi(args[1])
	text := args[2]
	fixed := 10
	if major != 1 {
		fixed = 12
	}
	pad := 64 - (fixed+len(text)+1)%64
	if pad == 64 {
		pad = 0
	}
	text += strings.Repeat(" ", pad) + "\n"
	b := append([]byte(npy.NpyMagic), byte(major), 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(text)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(text)))
	}
	b = append(b, text...)
	if len(args) > 3 {
		n, err := strconv.Atoi(args[3])
		ts.Check(err)
		b = append(b, make([]byte, n)...)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
}

// truncate FILE N cuts FILE to N bytes (negative N: remove -N bytes).
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: truncate file n")
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	name := ts.MkAbs(args[0])
	if n < 0 {
		fi, err := os.Stat(name)
		ts.Check(err)
		n += fi.Size()
	}
	ts.Check(os.Truncate(name, n))
}

// mkst OUT HEADER DATA writes a safetensors file by hand: the 8-byte
// little-endian length of the text file HEADER, that text, then the bytes
// of DATA (each without the trailing newline a txtar section ends with). Scripts use it for honest
// and hostile files alike.
func cmdMkSafetensors(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: mkst out header data")
	}
	h := strings.TrimSuffix(ts.ReadFile(args[1]), "\n")
	data := strings.TrimSuffix(ts.ReadFile(args[2]), "\n")
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(h)))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(string(n[:])+h+data), 0o644))
}

// mknpz OUT NAME=FILE... writes an npz archive (stored, as numpy.savez)
// whose member NAME.npy holds FILE's bytes; a NAME may hold any bytes
// given as Go string escapes ("a\x1bb").
func cmdMkNpz(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: mknpz out.npz name=file...")
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, a := range args[1:] {
		name, file, ok := strings.Cut(a, "=")
		if !ok {
			ts.Fatalf("mknpz: %q is not NAME=FILE", a)
		}
		if u, err := strconv.Unquote(`"` + name + `"`); err == nil {
			name = u
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
		ts.Check(err)
		_, err = w.Write([]byte(ts.ReadFile(file)))
		ts.Check(err)
	}
	ts.Check(zw.Close())
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b.Bytes(), 0o644))
}
