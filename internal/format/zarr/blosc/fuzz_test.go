package blosc

import "testing"

// FuzzDecode: no frame makes the decoder panic or allocate more than
// the limit it is given, and what it accepts it decodes the same way
// twice.
func FuzzDecode(f *testing.F) {
	for _, ts := range []int{1, 2, 4, 8} {
		for _, sh := range []int{NoShuffle, Shuffle} {
			frame, err := EncodeLZ4(sample(3000, ts, int64(ts)), ts, sh)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(frame)
		}
	}
	f.Add([]byte{2, 1, 0x21, 4, 16, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		a, err := Decode(frame, 1<<20)
		if err != nil {
			return
		}
		b := make([]byte, len(a))
		if err := DecodeInto(b, frame); err != nil || string(a) != string(b) {
			t.Fatalf("Decode and DecodeInto disagree: %v", err)
		}
	})
}
