package batch

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
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
	bar        *progressbar.ProgressBar
	start      time.Time
	files      int   // finished (done, skipped or failed)
	failed     int   //
	bytes      int64 // input bytes of the finished files
	totalFiles int
	totalBytes int64
	stop, done chan struct{}
}

func newReporter(w io.Writer, mode Progress, interval time.Duration, files int, bytes int64) *reporter {
	r := &reporter{w: w, mode: mode, start: time.Now(), totalFiles: files, totalBytes: bytes}
	switch mode {
	case ProgressBar:
		// The bar counts input bytes; one more than there are, so that it
		// is not "finished" (and frozen) before the last file is, which
		// may be empty. finish fills it.
		r.bar = progressbar.NewOptions64(bytes+1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(r.filesText()),
			progressbar.OptionShowCount(),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			// At most 40 columns of bar, fewer when the terminal is
			// narrow; a terminal of unknown width (0) gets 40.
			progressbar.OptionSetWidth(40),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
		)
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
	el := time.Since(r.start)
	rate := 0.0
	if s := el.Seconds(); s > 0 {
		rate = float64(r.bytes) / s
	}
	left := "unknown"
	switch {
	case r.files == r.totalFiles:
		left = "done"
	case rate > 0:
		left = "about " + roundDuration(time.Duration(float64(r.totalBytes-r.bytes)/rate*float64(time.Second))).String() + " left"
	}
	failed := ""
	if r.failed > 0 {
		failed = fmt.Sprintf(" (%d failed)", r.failed)
	}
	fmt.Fprintf(r.w, "depthspace: progress: %s%s, %s of %s, %s/s, %s, %s elapsed\n",
		r.filesText(), failed, FormatBytes(r.bytes), FormatBytes(r.totalBytes), FormatBytes(int64(rate)), left, roundDuration(el))
}

// fileDone counts one finished file of size input bytes.
func (r *reporter) fileDone(size int64, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files++
	r.bytes += size
	if failed {
		r.failed++
	}
	if r.bar != nil {
		r.bar.Describe(r.filesText())
		_ = r.bar.Add64(size)
	}
}

// println writes a line (a failure) without tearing the bar: the bar is
// cleared and comes back at the next update.
func (r *reporter) println(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Clear()
	}
	fmt.Fprintln(r.w, s)
	if r.bar != nil {
		_ = r.bar.RenderBlank()
	}
}

// finish draws the final state: the full bar, or a last plain line.
func (r *reporter) finish() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.mode {
	case ProgressBar:
		_ = r.bar.Finish()
		fmt.Fprintln(r.w)
	case ProgressLines:
		r.line()
	}
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
