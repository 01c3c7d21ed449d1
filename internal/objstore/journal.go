package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The journal of multipart uploads in flight: a file per upload, made
// when it is created and removed when it is completed or seen aborted,
// under the user's cache directory. A run that cannot abort its upload
// (the server was gone when it gave up, or it was killed with SIGKILL)
// leaves its file behind, and the next run on this host that uploads
// the same key aborts that upload: its run is over (its process is
// gone), so nothing else will. An upload of another host, or of a
// process still running, is never touched: another run may be writing
// the same key. Without a usable cache directory there is no journal,
// and an upload left behind stays until the bucket's lifecycle rule
// removes it.

// journalEntry is what a journal file holds.
type journalEntry struct {
	Endpoint, Bucket, Key, ID string
	Host                      string
	PID                       int
	Started                   time.Time
}

var hostName = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// journal is the journal's directory, made if need be; "" when there is
// none.
func journal() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir = filepath.Join(dir, "depthspace", "s3-uploads")
	if os.MkdirAll(dir, 0o700) != nil {
		return ""
	}
	return dir
}

func (e *journalEntry) file(dir string) string {
	h := sha256.Sum256([]byte(e.Endpoint + "\x00" + e.Bucket + "\x00" + e.Key + "\x00" + e.ID))
	return filepath.Join(dir, hex.EncodeToString(h[:16])+".json")
}

// record notes the upload id of u as this process's, in flight.
func (s *Store) record(u URL, id string) {
	dir := journal()
	if dir == "" {
		return
	}
	e := &journalEntry{Endpoint: s.endpoint, Bucket: u.Bucket, Key: u.Key, ID: id, Host: hostName(), PID: os.Getpid(), Started: time.Now()}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	tmp := e.file(dir) + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, e.file(dir))
	}
}

// forget removes the journal file of the upload id of u.
func (s *Store) forget(u URL, id string) {
	if dir := journal(); dir != "" {
		e := &journalEntry{Endpoint: s.endpoint, Bucket: u.Bucket, Key: u.Key, ID: id}
		_ = os.Remove(e.file(dir))
	}
}

// abortLeftBehind aborts the uploads of u's key that the journal holds
// from runs of this host that are over, and forgets those the server no
// longer has. Failures are not the new upload's: it goes on.
func (s *Store) abortLeftBehind(ctx context.Context, u URL) {
	dir := journal()
	if dir == "" {
		return
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, f := range files {
		if filepath.Ext(f.Name()) != ".json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		var e journalEntry
		if err != nil || json.Unmarshal(b, &e) != nil {
			continue
		}
		if e.Endpoint != s.endpoint || e.Bucket != u.Bucket || e.Key != u.Key || e.Host != hostName() || running(e.PID) {
			continue
		}
		up := &upload{s: s, u: u, id: e.ID}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if up.abortFully(actx) {
			s.forget(u, e.ID)
		}
		cancel()
	}
}
