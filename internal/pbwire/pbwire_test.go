package pbwire

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// pbwire must agree with protowire, the library it replaces, on every
// input: values, lengths and error codes.
func check(t *testing.T, b []byte) {
	t.Helper()
	v1, n1 := ConsumeVarint(b)
	v2, n2 := protowire.ConsumeVarint(b)
	if v1 != v2 || n1 != n2 {
		t.Fatalf("ConsumeVarint(% x) = %d, %d; protowire %d, %d", b, v1, n1, v2, n2)
	}
	num1, typ1, n1 := ConsumeTag(b)
	num2, typ2, n2 := protowire.ConsumeTag(b)
	if int32(num1) != int32(num2) || int8(typ1) != int8(typ2) || n1 != n2 {
		t.Fatalf("ConsumeTag(% x) = %d, %d, %d; protowire %d, %d, %d", b, num1, typ1, n1, num2, typ2, n2)
	}
	x1, n1 := ConsumeBytes(b)
	x2, n2 := protowire.ConsumeBytes(b)
	if !bytes.Equal(x1, x2) || n1 != n2 {
		t.Fatalf("ConsumeBytes(% x) = %d; protowire %d", b, n1, n2)
	}
	for typ := Type(0); typ < 8; typ++ {
		for _, num := range []Number{1, 2, 7} {
			a, c := ConsumeFieldValue(num, typ, b), protowire.ConsumeFieldValue(protowire.Number(num), protowire.Type(typ), b)
			if a != c {
				t.Fatalf("ConsumeFieldValue(%d, %d, % x) = %d; protowire %d", num, typ, b, a, c)
			}
			if (ParseError(a) == nil) != (protowire.ParseError(c) == nil) {
				t.Fatalf("ParseError(%d) = %v; protowire %v", a, ParseError(a), protowire.ParseError(c))
			}
		}
	}
}

func TestAgreesWithProtowire(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		b := make([]byte, rng.IntN(14))
		for j := range b {
			switch rng.IntN(4) {
			case 0:
				b[j] = 0x80 | byte(rng.IntN(128))
			case 1:
				b[j] = 0xff
			default:
				b[j] = byte(rng.IntN(256))
			}
		}
		check(t, b)
	}
	for _, v := range []uint64{0, 1, 127, 128, 300, 1 << 35, 1<<63 - 1, 1 << 63, ^uint64(0)} {
		if got, want := AppendVarint(nil, v), protowire.AppendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("AppendVarint(%d) = % x; protowire % x", v, got, want)
		}
		check(t, AppendVarint(nil, v))
	}
	for _, num := range []Number{1, 15, 16, 2047, 1<<29 - 1} {
		for typ := Type(0); typ < 6; typ++ {
			if got, want := AppendTag(nil, num, typ), protowire.AppendTag(nil, protowire.Number(num), protowire.Type(typ)); !bytes.Equal(got, want) {
				t.Errorf("AppendTag(%d, %d) = % x; protowire % x", num, typ, got, want)
			}
		}
	}
	if got, want := AppendBytes([]byte{9}, []byte("abc")), protowire.AppendBytes([]byte{9}, []byte("abc")); !bytes.Equal(got, want) {
		t.Errorf("AppendBytes = % x; protowire % x", got, want)
	}
	if got, want := AppendString(nil, "xyz"), protowire.AppendString(nil, "xyz"); !bytes.Equal(got, want) {
		t.Errorf("AppendString = % x; protowire % x", got, want)
	}
	if got, want := AppendFixed32(nil, 0xdeadbeef), protowire.AppendFixed32(nil, 0xdeadbeef); !bytes.Equal(got, want) {
		t.Errorf("AppendFixed32 = % x; protowire % x", got, want)
	}
	// Groups, nested and mismatched.
	g := AppendTag(nil, 2, VarintType)
	g = AppendVarint(g, 5)
	g = AppendTag(g, 3, StartGroupType)
	g = AppendTag(g, 3, EndGroupType)
	check(t, append(g, AppendTag(nil, 1, EndGroupType)...))
	check(t, append(g, AppendTag(nil, 2, EndGroupType)...))
}

func FuzzAgreesWithProtowire(f *testing.F) {
	f.Add([]byte{0x08, 0x96, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x0b, 0x10, 0x01, 0x0c})
	f.Fuzz(func(t *testing.T, b []byte) { check(t, b) })
}
