package blosc

import "errors"

// blosclz's far matches add this to their 16-bit distance (blosclz.c's
// MAX_DISTANCE).
const bloscLZMaxDistance = 8191

var errBloscLZ = errors.New("blosclz stream is corrupt")

// bloscLZ fills dst from one blosclz stream, as blosclz.c's
// blosclz_decompress reads it. Each step starts with a control byte:
// under 32, a run of ctrl+1 literal bytes; otherwise a match whose
// length is in the top 3 bits (7 means more length bytes follow, each
// added until one is not 255) and whose distance is the low 5 bits and
// the next byte (31 and 255 there: a 16-bit distance follows, plus
// 8191). The first control byte keeps only its low 5 bits (its top bits
// name the stream's level). A stream ends after a literal run or a match
// whose next control byte would be past its end; c-blosc then checks
// that the block was filled, as this does.
func bloscLZ(dst, src []byte) error {
	if len(src) == 0 {
		return errBloscLZ
	}
	ip, op := 1, 0
	ctrl := int(src[0] & 31)
	for {
		if ctrl >= 32 {
			length := ctrl>>5 - 1
			ofs := (ctrl & 31) << 8
			if length == 7-1 {
				for {
					if ip+1 >= len(src) {
						return errBloscLZ
					}
					code := int(src[ip])
					ip++
					length += code
					if code != 255 {
						break
					}
				}
			} else if ip+1 >= len(src) {
				return errBloscLZ
			}
			code := int(src[ip])
			ip++
			length += 3
			ref := op - ofs - code
			if code == 255 && ofs == 31<<8 {
				if ip+1 >= len(src) {
					return errBloscLZ
				}
				ofs = int(src[ip])<<8 | int(src[ip+1])
				ip += 2
				ref = op - ofs - bloscLZMaxDistance
			}
			if op+length > len(dst) || ref-1 < 0 {
				return errBloscLZ
			}
			if ip >= len(src) {
				break
			}
			ctrl = int(src[ip])
			ip++
			ref--
			// A match may overlap what it writes (a run): copied byte by
			// byte forward, as the format means it.
			if op-ref >= length {
				copy(dst[op:op+length], dst[ref:ref+length])
			} else {
				for i := range length {
					dst[op+i] = dst[ref+i]
				}
			}
			op += length
		} else {
			n := ctrl + 1
			if op+n > len(dst) || ip+n > len(src) {
				return errBloscLZ
			}
			copy(dst[op:], src[ip:ip+n])
			op += n
			ip += n
			if ip >= len(src) {
				break
			}
			ctrl = int(src[ip])
			ip++
		}
	}
	if op != len(dst) {
		return errBloscLZ
	}
	return nil
}
