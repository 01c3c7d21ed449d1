//go:build unix

package fileio

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestDirOutputKilled: a local store's run killed by SIGKILL (which
// nothing catches) before Commit leaves the target as it was, a store
// or nothing, and its half-built store only in a staging directory
// beside it, named as temporary outputs are: the next run writes the
// target and never touches what the killed one left. A directory at
// the target that is not a store (chunk-shaped files alone) is refused,
// as on a place without the marker.
func TestDirOutputKilled(t *testing.T) {
	if dir := os.Getenv("DEPTHSPACE_TEST_KILLED_STORE"); dir != "" {
		o, err := CreateDir(filepath.Join(dir, "s.zarr"), isStore)
		if err != nil {
			os.Exit(3)
		}
		for _, k := range []string{"c/0", "c/1", "meta"} {
			if err := o.Put(k, []byte("killed run")); err != nil {
				os.Exit(3)
			}
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	for _, previous := range []bool{false, true} {
		dir := t.TempDir()
		target := filepath.Join(dir, "s.zarr")
		if previous {
			os.MkdirAll(filepath.Join(target, "c"), 0o755)
			os.WriteFile(filepath.Join(target, "meta"), []byte("old"), 0o644)
			os.WriteFile(filepath.Join(target, "c", "0"), []byte("old"), 0o644)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestDirOutputKilled$")
		cmd.Env = append(os.Environ(), "DEPTHSPACE_TEST_KILLED_STORE="+dir)
		err := cmd.Run()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("previous %v: the run was not killed: %v", previous, err)
		}
		if b, err := os.ReadFile(filepath.Join(target, "meta")); previous && string(b) != "old" || !previous && err == nil {
			t.Errorf("previous %v: the target changed: meta %q, %v", previous, b, err)
		}
		staging := regexp.MustCompile(`^\.s\.zarr\.depthspace-[0-9]+\.tmp$`)
		ents, _ := os.ReadDir(dir)
		var left []string
		for _, e := range ents {
			if e.Name() != "s.zarr" {
				left = append(left, e.Name())
			}
		}
		if len(left) != 1 || !staging.MatchString(left[0]) {
			t.Fatalf("previous %v: beside the target %q, want one staging directory .s.zarr.depthspace-*.tmp", previous, left)
		}
		o, err := CreateDir(target, isStore)
		if err != nil {
			t.Fatalf("previous %v: the next run: %v", previous, err)
		}
		o.Put("meta", []byte("new"))
		if err := o.Commit(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, left[0], "c", "1")); string(b) != "killed run" {
			t.Errorf("previous %v: the next run touched the killed run's staging directory", previous)
		}
		// The cleanup docs/reliability.md gives removes staging
		// directories as well as files.
		if out, err := exec.Command("find", dir, "-name", ".*.depthspace-*.tmp", "-prune", "-exec", "rm", "-rf", "{}", "+").CombinedOutput(); err != nil {
			t.Fatalf("find -exec rm: %v\n%s", err, out)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "s.zarr" {
			t.Errorf("previous %v: after the documented cleanup, %v beside the store", previous, ents)
		}
	}

	dir := t.TempDir()
	chunks := filepath.Join(dir, "logs")
	os.MkdirAll(filepath.Join(chunks, "x"), 0o755)
	for _, f := range []string{"1", "2", "x/0.0"} {
		os.WriteFile(filepath.Join(chunks, f), []byte("someone else's"), 0o644)
	}
	if _, err := CreateDir(chunks, isStore); err == nil {
		t.Error("a directory of chunk-shaped files and no metadata was taken for a store to replace")
	}
}

// TestDirOutputInterrupted: SIGINT while workers are putting objects in
// new directories of a store leaves nothing: the handler's removal of
// the staging directory waits for the files being made, and no worker
// makes its directories again after it (they did, and staging
// directories were left behind, or the run ended with exit 2 on a
// missing directory instead of 130).
func TestDirOutputInterrupted(t *testing.T) {
	if dir := os.Getenv("DEPTHSPACE_TEST_INTERRUPTED_STORE"); dir != "" {
		HandleSignals()
		o, err := CreateDir(filepath.Join(dir, "s.zarr"), isStore)
		if err != nil {
			os.Exit(3)
		}
		var puts atomic.Int64
		for w := range 4 {
			go func() {
				for i := 0; ; i++ {
					if err := o.Put(fmt.Sprintf("c/%d/%d/%d", w, i/8, i%8), []byte("interrupted run")); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(2)
					}
					if puts.Add(1) == 400 {
						fmt.Println("putting")
					}
				}
			}()
		}
		select {}
	}
	for round := range 5 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestDirOutputInterrupted$")
		cmd.Env = append(os.Environ(), "DEPTHSPACE_TEST_INTERRUPTED_STORE="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the run did not begin: %v; %s", round, err, stderr.Bytes())
		}
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("round %d: exit %d, want 130; %s", round, code, stderr.Bytes())
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("round %d: left behind: %v", round, ents)
		}
	}
}

// TestSecondSignalExits: a second SIGINT ends a run at once while the
// first's handler waits for a server that does not answer (a store's
// put, given abortGrace to be answered).
func TestSecondSignalExits(t *testing.T) {
	if dir := os.Getenv("DEPTHSPACE_TEST_SECOND_SIGNAL"); dir != "" {
		HandleSignals()
		// A temporary output, which the first signal's handler removes
		// before it deletes the store's objects: the parent's sign that
		// the first signal is in hand (two sent at once may arrive as one).
		if _, err := createTracked(dir, "first-signal-*"); err != nil {
			os.Exit(3)
		}
		abortGrace = time.Hour
		memPlace.reset()
		memPlace.late, memPlace.entered, memPlace.release, memPlace.stored = "c/0", make(chan struct{}), make(chan struct{}), make(chan struct{})
		o, err := CreateStore("mem://b/s.zarr/", claimsMeta, isMeta)
		if err != nil {
			os.Exit(3)
		}
		if err := o.Put("c/0", []byte("c/0")); err != nil {
			os.Exit(3)
		}
		<-memPlace.entered
		fmt.Println("putting")
		select {}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalExits$")
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), "DEPTHSPACE_TEST_SECOND_SIGNAL="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("the run did not begin: %v", err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	for ents, _ := os.ReadDir(dir); len(ents) > 0; ents, _ = os.ReadDir(dir) {
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measure
		t.Fatal("the run goes on after a second SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
}
