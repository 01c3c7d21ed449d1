package tar

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// testShard is a shard of the headers the codec meets: one-block ones
// (ustar and GNU), a PAX long name and PAX records, a directory and a
// link (no content), a member larger than the writer's buffers. hdrs are
// the headers as written.
func testShard(t *testing.T) (shard []byte, hdrs []tar.Header) {
	t.Helper()
	when := time.Unix(1_700_000_000, 0)
	reg := func(name string, size int) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(size), Mode: 0o640, ModTime: when, Uid: 1000, Gid: 100, Uname: "u", Gname: "g"}
	}
	hdrs = []tar.Header{
		reg("000001.input.npy", 200),
		reg("000001.cls", 1),
		{Typeflag: tar.TypeDir, Name: "sub/", Mode: 0o755, ModTime: when},
		{Typeflag: tar.TypeSymlink, Name: "sub/link", Linkname: "../000001.cls", ModTime: when},
		reg(strings.Repeat("n", 120)+".input.npy", 96),
		reg("000002.json", 8),
		reg("big.bin", 3<<20+5),
		reg("gnu.input.npy", 160),
	}
	hdrs[5].PAXRecords = map[string]string{"comment": "kept"}
	hdrs[7].Format = tar.FormatGNU
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hdrs {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(bytes.Repeat([]byte{7}, int(h.Size))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), hdrs
}

// A header block altered so that it is not copied as it is (a bad
// checksum, another size) is not taken as plain: the writer encodes it
// again.
func TestTarHeaderNotPlain(t *testing.T) {
	shard, hdrs := testShard(t)
	hdr := hdrs[0]
	if !plainHeader(shard[:512], &hdr) {
		t.Fatal("archive/tar's own ustar block is not taken as plain")
	}
	bad := bytes.Clone(shard[:512])
	bad[0] ^= 1 // the name changes, the checksum no longer adds up
	if plainHeader(bad, &hdr) {
		t.Error("a block with a wrong checksum is taken as plain")
	}
	h2 := hdr
	h2.Size++
	if plainHeader(shard[:512], &h2) {
		t.Error("a block whose size differs from the header's is taken as plain")
	}
}

// plainMember reads what archive/tar reads from every header it takes,
// and takes the one-block headers of the test shard's regular files.
func TestPlainMemberAgreesWithArchiveTar(t *testing.T) {
	shard, _ := testShard(t)
	br := bytes.NewReader(shard)
	tr := tar.NewReader(br)
	var next int64
	taken := 0
	for {
		pm, ok := plainMember(shard, next)
		h, err := tr.Next()
		if err == io.EOF {
			if ok {
				t.Error("plainMember took the end of the archive for a member")
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		at := br.Size() - int64(br.Len())
		if ok {
			taken++
			if at != next+512 || pm.Name != h.Name || pm.Size != h.Size || pm.Typeflag != h.Typeflag {
				t.Errorf("plainMember %q %d %c at %d, archive/tar %q %d %c at %d", pm.Name, pm.Size, pm.Typeflag, next+512, h.Name, h.Size, h.Typeflag, at)
			}
		}
		next = at + (h.Size+511)/512*512
	}
	if taken < 4 {
		t.Errorf("plainMember took %d headers of the shard, want its one-block ones", taken)
	}
}
