package batch

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseProgress(t *testing.T) {
	for _, c := range []struct {
		mode string
		tty  bool
		want Progress
	}{
		{"auto", true, ProgressBar}, {"auto", false, ProgressNone},
		{"always", true, ProgressBar}, {"always", false, ProgressLines},
		{"never", true, ProgressNone}, {"never", false, ProgressNone},
	} {
		if got, err := ParseProgress(c.mode, c.tty); err != nil || got != c.want {
			t.Errorf("ParseProgress(%q, %v) = %v, %v; want %v", c.mode, c.tty, got, err, c.want)
		}
	}
	if _, err := ParseProgress("yes", false); err == nil || !strings.Contains(err.Error(), "auto, always or never") {
		t.Errorf("ParseProgress(yes): %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the ticker and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Plain lines come every interval and once at the end, with files, bytes,
// rate and time left, and no terminal control characters.
func TestProgressLines(t *testing.T) {
	var w syncBuffer
	r := newReporter(&w, ProgressLines, 20*time.Millisecond, 4, 4<<20)
	r.fileDone(1<<20, 0, false)
	r.fileDone(1<<20, 0, true)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(w.String(), "2/4 files") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r.println("depthspace: x.npy: broken")
	r.fileDone(1<<20, 0, false)
	r.fileDone(1<<20, 0, false)
	r.finish()
	out := w.String()
	line := regexp.MustCompile(`(?m)^depthspace: progress: 2/4 files \(1 failed\), 2\.0 MiB of 4\.0 MiB, \S+ \S+/s, (about \S+ left|unknown), \S+ elapsed$`)
	if !line.MatchString(out) {
		t.Errorf("no periodic line in\n%s", out)
	}
	if !strings.Contains(out, "depthspace: x.npy: broken\n") {
		t.Errorf("failure line missing from\n%s", out)
	}
	last := regexp.MustCompile(`depthspace: progress: 4/4 files \(1 failed\), 4\.0 MiB of 4\.0 MiB, \S+ \S+/s, done, \S+ elapsed\n$`)
	if !last.MatchString(out) {
		t.Errorf("no final line at the end of\n%s", out)
	}
	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("control characters in plain lines: %q", out)
	}
}

// The bar (here written to a buffer) shows files, bytes, rate and time,
// ends full, and failure lines do not land inside it.
func TestProgressBar(t *testing.T) {
	var w syncBuffer
	r := newReporter(&w, ProgressBar, 0, 3, 3<<20)
	r.fileDone(1<<20, 0, false)
	r.println("depthspace: y.npy: broken")
	r.fileDone(1<<20, 0, true)
	r.fileDone(1<<20, 0, false)
	r.finish()
	out := w.String()
	for _, want := range []string{"3/3 files", "100%", "3.0 MiB", "/s", "depthspace: y.npy: broken\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing from %q", want, out)
		}
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("the bar's last line is not ended: %q", out)
	}
	if strings.Contains(out, "broken\r") {
		t.Errorf("bar drawn over a failure line: %q", out)
	}
}

// Bytes done inside a running file move the progress, and the file's end
// does not count them twice.
func TestPartialProgress(t *testing.T) {
	var w syncBuffer
	r := newReporter(&w, ProgressLines, time.Hour, 2, 8<<20)
	r.partial(2 << 20)
	r.partial(1 << 20)
	r.mu.Lock()
	r.line()
	r.mu.Unlock()
	r.fileDone(4<<20, 3<<20, false) // 4 MiB file, 3 MiB of data shown
	r.fileDone(4<<20, 0, false)
	r.finish()
	out := w.String()
	for _, want := range []string{"0/2 files, 3.0 MiB of 8.0 MiB", "2/2 files, 8.0 MiB of 8.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing from\n%s", want, out)
		}
	}
}

// More bytes than the total (a JSON file's data outgrowing its text) never
// shows a negative time left.
func TestProgressOvershoot(t *testing.T) {
	var w syncBuffer
	r := newReporter(&w, ProgressLines, time.Hour, 2, 100)
	r.start = time.Now().Add(-10 * time.Second) // 15 B/s: 50 bytes too many is -3.3s
	r.partial(150)
	r.mu.Lock()
	r.line()
	r.mode = ProgressBar
	r.cols, r.barCols = 80, 20
	r.draw()
	r.mu.Unlock()
	if out := w.String(); regexp.MustCompile(`-\d`).MatchString(out) {
		t.Errorf("negative time left in %q", out)
	}
}

// The bar fills in eighths of a column and always has its width.
func TestBarCells(t *testing.T) {
	for _, c := range []struct {
		frac  float64
		width int
		want  string
	}{{0, 10, "          "}, {1, 10, "██████████"}, {0.5, 10, "█████     "}, {0.0625, 4, "▎   "}, {0.99, 10, "█████████▉"}} {
		if got := bar(c.frac, c.width); got != c.want {
			t.Errorf("bar(%v, %d) = %q, want %q", c.frac, c.width, got, c.want)
		}
	}
}

func TestNoProgress(t *testing.T) {
	var w syncBuffer
	r := newReporter(&w, ProgressNone, time.Millisecond, 2, 10)
	r.fileDone(5, 0, false)
	time.Sleep(5 * time.Millisecond)
	r.fileDone(5, 0, false)
	r.finish()
	if w.String() != "" {
		t.Errorf("progress none wrote %q", w.String())
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 3 << 30: "3.0 GiB", 1 << 62: "4.0 EiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
