package fileio

import "sort"

// Extents is a set of byte ranges, kept merged and sorted: which bytes of
// an object have arrived (a download by parallel ranged GETs) or have
// been written (an output written by position). Ranges that touch or
// overlap become one, so a set filled front to back by a few streams
// holds a few ranges, whatever the object's size.
type Extents struct {
	r []extent // sorted by start; no two overlap or touch
}

type extent struct{ start, end int64 }

// Add puts bytes [off, off+n) in the set.
func (e *Extents) Add(off, n int64) {
	if n <= 0 {
		return
	}
	start, end := off, off+n
	// i: the first range that ends at or after start (it may merge);
	// j: the first range that starts after end (it stays apart).
	i := sort.Search(len(e.r), func(k int) bool { return e.r[k].end >= start })
	j := sort.Search(len(e.r), func(k int) bool { return e.r[k].start > end })
	if i < j {
		start = min(start, e.r[i].start)
		end = max(end, e.r[j-1].end)
	}
	switch {
	case i == j:
		e.r = append(e.r, extent{})
		copy(e.r[i+1:], e.r[i:])
	case j > i+1:
		e.r = append(e.r[:i+1], e.r[j:]...)
	}
	e.r[i] = extent{start, end}
}

// Covers says whether every byte of [off, off+n) is in the set.
func (e *Extents) Covers(off, n int64) bool {
	if n <= 0 {
		return true
	}
	i := sort.Search(len(e.r), func(k int) bool { return e.r[k].end > off })
	return i < len(e.r) && e.r[i].start <= off && e.r[i].end >= off+n
}

// Gaps calls fn with each range of [0, end) that is not in the set, in
// order.
func (e *Extents) Gaps(end int64, fn func(off, n int64)) {
	at := int64(0)
	for _, r := range e.r {
		if r.start >= end {
			break
		}
		if r.start > at {
			fn(at, r.start-at)
		}
		at = max(at, r.end)
	}
	if at < end {
		fn(at, end-at)
	}
}

// Ranges is how many separate ranges the set holds.
func (e *Extents) Ranges() int { return len(e.r) }
