package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func noEnv(string) string { return "" }

// settings are the collector's percentage and memory limit now.
func settings() (percent int, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), debug.SetMemoryLimit(-1)
}

// cycles is the number of collections finished.
func cycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rearmedAfterGC collects until p has re-armed from a collection that
// started after the call (two finished since: one under way at the call
// may have begun before), and returns the limit it set then.
func rearmedAfterGC(t *testing.T, p *pacer) int64 {
	t.Helper()
	after := cycles() + 2
	got := make(chan int64, 1)
	p.mu.Lock()
	p.rearmed = func(limit int64) {
		if cycles() >= after {
			select {
			case got <- limit:
			default:
			}
		}
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.rearmed = nil
		p.mu.Unlock()
	}()
	// The cleanup runs on its own goroutine after the collection that
	// found the sentinel unreachable; a few collections give it the
	// chance whatever the scheduler does.
	for range 1000 {
		runtime.GC()
		runtime.Gosched()
		select {
		case limit := <-got:
			return limit
		default:
		}
	}
	t.Fatal("no re-arm after 1,000 collections")
	return 0
}

func TestLimitFollowsLiveHeap(t *testing.T) {
	p := newPacer()
	const room = 1 << 20
	stop := p.start(room, noEnv)
	defer stop()
	if percent, _ := settings(); percent != -1 {
		t.Fatalf("GOGC during Start: %d, want off (-1)", percent)
	}
	small := rearmedAfterGC(t, p)

	const held = 64 << 20
	big := make([]byte, held)
	grown := rearmedAfterGC(t, p)
	// Live heap now holds big: the limit keeps it and a room as large.
	if grown < small+2*held-room {
		t.Errorf("limit with %d MiB live: %d MiB, want at least %d MiB", held>>20, grown>>20, (small+2*held-room)>>20)
	}
	if _, limit := settings(); limit < small+2*held-room {
		t.Errorf("memory limit %d MiB while %d MiB are live", limit>>20, held>>20)
	}
	runtime.KeepAlive(big)
	big = nil
	shrunk := rearmedAfterGC(t, p)
	if shrunk >= held {
		t.Errorf("limit once %d MiB were dropped: %d MiB, want under %d MiB", held>>20, shrunk>>20, held>>20)
	}
	_ = big
}

func TestStopPutsBack(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	p := newPacer()
	stop := p.start(8<<20, noEnv)
	if percent, limit := settings(); percent != -1 || limit == math.MaxInt64 {
		t.Fatalf("during Start: GOGC %d, limit %d; want off and a limit", percent, limit)
	}
	stop()
	stop() // a second call changes nothing
	if percent, limit := settings(); percent != 150 || limit != math.MaxInt64 {
		t.Errorf("after stop: GOGC %d, limit %d; want 150 and none", percent, limit)
	}
	// A sentinel planted before the stop sets nothing when it is found.
	runtime.GC()
	runtime.GC()
	if _, limit := settings(); limit != math.MaxInt64 {
		t.Errorf("limit %d after the collections that followed stop, want none", limit)
	}
}

func TestUserSettingsStepAside(t *testing.T) {
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		p := newPacer()
		stop := p.start(8<<20, func(k string) string {
			if k == name {
				return "100"
			}
			return ""
		})
		if percent, limit := settings(); percent != 100 || limit != math.MaxInt64 {
			t.Errorf("%s set: GOGC %d, limit %d during Start; want 100 and none", name, percent, limit)
		}
		stop()
	}
	const own = 1 << 40
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(own))
	p := newPacer()
	stop := p.start(8<<20, noEnv)
	if percent, limit := settings(); percent != 100 || limit != own {
		t.Errorf("a limit set by the program: GOGC %d, limit %d during Start; want 100 and %d", percent, limit, int64(own))
	}
	stop()
	if _, limit := settings(); limit != own {
		t.Errorf("after stop: limit %d, want %d", limit, int64(own))
	}
}

func TestOverlappingStartsAddRooms(t *testing.T) {
	p := newPacer()
	const outer, inner = 64 << 20, 256 << 20
	stopOuter := p.start(outer, noEnv)
	stopInner := p.start(inner, noEnv)
	if _, limit := settings(); limit < inner+outer {
		t.Errorf("limit with rooms of %d and %d MiB: %d MiB", outer>>20, inner>>20, limit>>20)
	}
	both := rearmedAfterGC(t, p)
	if both < inner+outer {
		t.Errorf("re-armed limit with rooms of %d and %d MiB: %d MiB", outer>>20, inner>>20, both>>20)
	}
	stopOuter() // the first to start need not be the last to stop
	if percent, limit := settings(); percent != -1 || limit > both-outer/2 || limit < inner {
		t.Errorf("after the outer stop: GOGC %d, limit %d MiB; want off and about %d MiB less than %d", percent, limit>>20, outer>>20, both>>20)
	}
	stopInner()
	if percent, limit := settings(); percent != 100 || limit != math.MaxInt64 {
		t.Errorf("after both stops: GOGC %d, limit %d; want 100 and none", percent, limit)
	}
}

func TestLimitFor(t *testing.T) {
	for _, c := range []struct{ overhead, live, room, want int64 }{
		{8 << 20, 2 << 20, 16 << 20, 26 << 20},        // small heap: the fixed room
		{8 << 20, 100 << 20, 16 << 20, 208 << 20},     // large heap: a room as large as it
		{-1 << 20, 2 << 20, 16 << 20, 18 << 20},       // a torn read counts no overhead
		{8 << 20, 16 << 20, 16 << 20, 40 << 20},       // the two paces meet
		{0, 0, 4 << 20, 4 << 20},                      // before the first collection
		{8 << 20, 17 << 20, 16 << 20, (8 + 34) << 20}, // just past the meeting point
	} {
		if got := limitFor(c.overhead, c.live, c.room); got != c.want {
			t.Errorf("limitFor(%d, %d, %d) = %d, want %d", c.overhead, c.live, c.room, got, c.want)
		}
	}
}
