package frames

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/openenoc/oetp/wire/wiretest"
)

// FuzzDescribe: describe never panics, whatever the frame, ceiling and
// expected length, and valid and problem always agree.
func FuzzDescribe(f *testing.F) {
	for _, v := range wiretest.ReadVectors(f, goldenV1) {
		frame, _ := hex.DecodeString(v.FrameHex)
		var e uint32
		if v.ExpectLength != nil {
			e = *v.ExpectLength
		}
		f.Add(frame, uint16(v.MaxFrame), e, v.ExpectLength != nil)
	}
	// The reliable transport's vectors too.
	for _, v := range wiretest.ReadVectors(f, goldenReliable) {
		frame, _ := hex.DecodeString(v.FrameHex)
		f.Add(frame, uint16(v.MaxFrame), uint32(0), false)
	}
	f.Fuzz(func(t *testing.T, frame []byte, maxFrame uint16, expect uint32, hasExpect bool) {
		opt := Options{MaxFrame: int(maxFrame)}
		if hasExpect {
			opt.ExpectLength = &expect
		}
		d := Describe(frame, opt)
		if d.Valid != (d.Problem == "") || d.FrameLen != len(frame) {
			t.Fatalf("valid %v, problem %q, frame_len %d of %d", d.Valid, d.Problem, d.FrameLen, len(frame))
		}
		if d.Valid && d.Kind != "oetp" && d.Kind != "reliable" {
			t.Fatalf("valid %s frame", d.Kind)
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatal(err)
		}
	})
}
