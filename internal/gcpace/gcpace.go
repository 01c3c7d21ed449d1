// Package gcpace paces Go's collector by a fixed room of heap rather than
// by a percentage of it, for work whose live heap is small and whose
// garbage is made fast: a batch of tiny files, a Zarr run chunk to chunk.
//
// A percentage (GOGC) lets the heap grow to a multiple of what the last
// collection found live. With a live heap of 2 MiB that is a few MiB of
// garbage between collections: a batch of small files collected every
// 2,500 or so at GOGC 200; and a collection whose marking is held off
// its core counts what is allocated meanwhile as live, which the
// percentage multiplies into the next goal. Start turns the percentage
// off and sets a memory limit of the runtime's own overhead, the live
// heap and a room; after each collection the limit is set again from
// what that collection found live, so the collector runs once per room
// of garbage, a held-off marking only adds to the next limit, and memory
// stays near the live heap plus the room however long the work runs.
//
// The room grows with the live heap (it is never less than the live heap
// itself, the default GOGC's pace): a file whose decoding holds hundreds
// of MiB on the heap makes the limit follow it up in a few doublings
// instead of collecting once per room against a limit set before it.
//
// GOGC or GOMEMLIMIT in the environment, or a memory limit set by the
// program, are the user's choice: then Start does nothing.
package gcpace

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
)

// The runtime's memory, as runtime/metrics names it. The limit counts
// everything the runtime holds from the system except the heap pages it
// has given back; of the heap, only the live part is kept in the next
// limit: free pages and garbage are what the room replaces.
var names = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/unused:bytes",
}

// pacer is the state shared by every Start: the rooms asked for by the
// holders still running (their sum is used), and what the first of them
// found, to be put back when the last one stops.
type pacer struct {
	mu      sync.Mutex
	rooms   []int64
	epoch   uint64 // a sentinel of an earlier epoch re-arms nothing
	percent int
	limit   int64
	samples []metrics.Sample
	// rearmed, when set (tests), is called after each re-arm with the
	// limit set.
	rearmed func(limit int64)
}

var pace = newPacer()

func newPacer() *pacer {
	p := &pacer{samples: make([]metrics.Sample, len(names))}
	for i, n := range names {
		p.samples[i].Name = n
	}
	return p
}

// Start paces the collector by room bytes of heap until the returned
// function is called. Starts may nest or overlap (a Zarr store within a
// batch, two stores at once): each makes its own garbage, so the rooms
// of those running add up, and the last stop puts back the collector's
// percentage and memory limit as they were before the first, whatever
// order they stop in. The returned function may be called more than
// once.
func Start(room int64) (stop func()) {
	return pace.start(room, os.Getenv)
}

func (p *pacer) start(room int64, getenv func(string) string) func() {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rooms) == 0 {
		if debug.SetMemoryLimit(-1) != math.MaxInt64 {
			return func() {} // the program set a limit of its own
		}
		p.percent = debug.SetGCPercent(-1)
		p.limit = math.MaxInt64
		p.epoch++
		p.rooms = append(p.rooms, room)
		p.arm()
	} else {
		p.rooms = append(p.rooms, room)
		p.setLimit()
	}
	var once sync.Once
	return func() { once.Do(func() { p.stop(room) }) }
}

func (p *pacer) stop(room int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rooms = slices.Delete(p.rooms, slices.Index(p.rooms, room), slices.Index(p.rooms, room)+1)
	if len(p.rooms) > 0 {
		p.setLimit()
		return
	}
	p.epoch++
	debug.SetMemoryLimit(p.limit)
	debug.SetGCPercent(p.percent)
}

// sentinel is what the collector finds unreachable once a cycle; it
// holds a pointer so that it is never one of the tiny allocator's
// blocks, whose cleanups may wait on their neighbours.
type sentinel struct{ _ *byte }

// arm sets the limit and plants a sentinel whose cleanup, after the
// next collection, arms again. Called with p.mu held.
func (p *pacer) arm() {
	limit := p.setLimit()
	runtime.AddCleanup(new(sentinel), p.rearm, p.epoch)
	if p.rearmed != nil {
		p.rearmed(limit)
	}
}

func (p *pacer) rearm(epoch uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if epoch == p.epoch && len(p.rooms) > 0 {
		p.arm()
	}
}

// setLimit sets and returns the memory limit for the live heap the last
// collection found. Called with p.mu held.
func (p *pacer) setLimit() int64 {
	metrics.Read(p.samples)
	v := func(i int) int64 { return int64(p.samples[i].Value.Uint64()) }
	live, total, released, objects, free, unused := v(0), v(1), v(2), v(3), v(4), v(5)
	var room int64
	for _, r := range p.rooms {
		room += r
	}
	limit := limitFor(total-released-objects-free-unused, live, room)
	debug.SetMemoryLimit(limit)
	return limit
}

// limitFor is the memory limit for a runtime holding overhead bytes besides
// its heap (stacks, the collector's metadata, the runtime's other
// holdings) with live bytes of live heap, paced by room: room bytes of
// garbage between collections, or live bytes when the live heap is the
// larger.
func limitFor(overhead, live, room int64) int64 {
	return max(overhead, 0) + live + max(room, live)
}
