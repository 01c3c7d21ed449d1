package batch

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress is how a batch shows its progress on standard error.
type Progress int

const (
	ProgressNone  Progress = iota // nothing until the summary
	ProgressBar                   // a bar redrawn in place: standard error is a terminal
	ProgressLines                 // a plain line every ProgressInterval and at the end
)

// ProgressInterval is the time between two plain progress lines.
const ProgressInterval = 2 * time.Second

// ParseProgress turns --progress auto|always|never into what to show,
// given whether standard error is a terminal: auto shows the bar on a
// terminal and nothing elsewhere (a log file stays clean); always shows
// the bar on a terminal and plain lines elsewhere.
func ParseProgress(mode string, stderrTTY bool) (Progress, error) {
	switch mode {
	case "auto":
		if stderrTTY {
			return ProgressBar, nil
		}
		return ProgressNone, nil
	case "always":
		if stderrTTY {
			return ProgressBar, nil
		}
		return ProgressLines, nil
	case "never":
		return ProgressNone, nil
	}
	return ProgressNone, fmt.Errorf("--progress %q: want auto, always or never", mode)
}

// reporter owns standard error during a run: progress, and the failure
// lines, which must not be torn by the bar.
type reporter struct {
	mu         sync.Mutex
	w          io.Writer
	mode       Progress
	bar        bool      // a bar is on the current line
	drawn      time.Time // when it was last drawn
	cols       int       // the terminal's width
	barCols    int       // columns of the bar itself; under 10: text only
	start      time.Time
	files      int   // finished (done, skipped or failed)
	failed     int   //
	bytes      int64 // input bytes of the finished files, and done so far of the others
	totalFiles int
	totalBytes int64
	stop, done chan struct{}
}

func newReporter(w io.Writer, mode Progress, interval time.Duration, files int, bytes int64) *reporter {
	r := &reporter{w: w, mode: mode, start: time.Now(), totalFiles: files, totalBytes: bytes}
	switch mode {
	case ProgressBar:
		// The bar keeps one width, chosen so that the longest line it
		// will draw fits the terminal (draw narrows it if failures are
		// counted too).
		r.cols = terminalWidth(w)
		longest := len(fmt.Sprintf("%d/%d files 100%% || %s/%s, 1023.9 MiB/s, 59m59s left",
			files, files, FormatBytes(bytes), FormatBytes(bytes)))
		r.barCols = min(barWidth, r.cols-1-longest)
		r.draw()
	case ProgressLines:
		if interval <= 0 {
			interval = ProgressInterval
		}
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.tick(interval)
	}
	return r
}

func (r *reporter) filesText() string {
	return fmt.Sprintf("%d/%d files", r.files, r.totalFiles)
}

func (r *reporter) tick(interval time.Duration) {
	defer close(r.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			r.line()
			r.mu.Unlock()
		}
	}
}

// line prints one plain progress line: files, bytes, rate and time left.
func (r *reporter) line() {
	el, rate, left, known := r.pace()
	text := "unknown"
	switch {
	case r.files == r.totalFiles:
		text = "done"
	case known:
		text = "about " + left.String() + " left"
	}
	fmt.Fprintf(r.w, "depthspace: progress: %s%s, %s of %s, %s/s, %s, %s elapsed\n",
		r.filesText(), r.failedText(), FormatBytes(r.bytes), FormatBytes(r.totalBytes), FormatBytes(int64(rate)), text, roundDuration(el))
}

// pace is the time since the start, the byte rate, and the time left at
// that rate (known once some bytes are done; never negative, though a
// JSON file's data can count more bytes than its text).
func (r *reporter) pace() (elapsed time.Duration, rate float64, left time.Duration, known bool) {
	elapsed = time.Since(r.start)
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(r.bytes) / s
	}
	if rate > 0 {
		left = roundDuration(time.Duration(float64(max(r.totalBytes-r.bytes, 0)) / rate * float64(time.Second)))
	}
	return elapsed, rate, left, rate > 0
}

// failedText is " (N failed)", or nothing.
func (r *reporter) failedText() string {
	if r.failed == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d failed)", r.failed)
}

// partial counts n bytes done inside a file still running, so that a large
// file moves the bar while it is converted.
func (r *reporter) partial(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bytes += n
	if r.mode == ProgressBar && time.Since(r.drawn) >= barInterval {
		r.draw()
	}
}

// fileDone counts one finished file of size input bytes, of which counted
// were already shown by partial.
func (r *reporter) fileDone(size, counted int64, failed bool) {
	if r.mode == ProgressNone {
		// Nothing shows the counts: no lock for the workers to
		// share for every file.
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files++
	r.bytes += size - counted
	if failed {
		r.failed++
	}
	// Redraws are throttled: a batch of many small files would spend
	// its time drawing.
	if r.mode == ProgressBar && time.Since(r.drawn) >= barInterval {
		r.draw()
	}
}

// println writes a line (a failure) without tearing the bar: the bar is
// cleared, the line written, and the bar drawn again below it.
func (r *reporter) println(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar {
		io.WriteString(r.w, "\r\x1b[K")
	}
	fmt.Fprintln(r.w, s)
	if r.mode == ProgressBar {
		r.draw()
	}
}

// finish draws the final state: the full bar, ended by a newline, or a
// last plain line.
func (r *reporter) finish() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.mode {
	case ProgressBar:
		r.draw()
		fmt.Fprintln(r.w)
	case ProgressLines:
		r.line()
	}
}

// barInterval is the least time between two redraws of the bar.
const barInterval = 100 * time.Millisecond

// barWidth is the most columns the bar itself takes.
const barWidth = 40

// draw redraws the bar in place: carriage return, the line, erase to the
// end of the line. The line is
//
//	12/40 files  30% |████████████▏                           | 1.2 GiB/4.0 GiB, 310.0 MiB/s, 9s left
//
// where the bar narrows (or goes) to fit a narrow terminal, so that the
// line never wraps, which would break the carriage-return redraw.
func (r *reporter) draw() {
	r.drawn = time.Now()
	frac := 1.0
	if r.totalBytes > 0 {
		frac = float64(r.bytes) / float64(r.totalBytes)
	} else if r.totalFiles > 0 {
		frac = float64(r.files) / float64(r.totalFiles)
	}
	if r.files < r.totalFiles {
		frac = min(frac, 0.999) // 100% only when every file is done
	}
	el, rate, left, known := r.pace()
	text := "? left"
	switch {
	case r.files == r.totalFiles:
		text = "done in " + roundDuration(el).String()
	case known:
		text = left.String() + " left"
	}
	head := fmt.Sprintf("%s%s %3d%% ", r.filesText(), r.failedText(), int(frac*100))
	tail := fmt.Sprintf(" %s/%s, %s/s, %s", FormatBytes(r.bytes), FormatBytes(r.totalBytes), FormatBytes(int64(rate)), text)
	line := head + tail[1:]
	if w := min(r.barCols, r.cols-1-len(head)-len(tail)-2); w >= 10 {
		line = head + "|" + bar(frac, w) + "|" + tail
	} else if len(line) > r.cols-1 {
		line = line[:max(r.cols-1, 0)] // the text alone is ASCII
	}
	fmt.Fprintf(r.w, "\r%s\x1b[K", line)
	r.bar = true
}

// bar is frac of width columns filled, in eighths of a column.
func bar(frac float64, width int) string {
	eighths := int(frac * float64(width*8))
	full, part := eighths/8, eighths%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	if full < width {
		if part > 0 {
			b.WriteRune([]rune(" ▏▎▍▌▋▊▉")[part])
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(strings.Repeat(" ", width-full-1))
	}
	return b.String()
}

// terminalWidth is the width of the terminal w writes to, or 80.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// FormatBytes prints a byte count in IEC units: 0 B, 512 B, 1.5 KiB, 3.2 GiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 6 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i-1])
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
