package frames

import (
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/wire/wiretest"
)

// The codec's golden vectors: v1's and the reliable transport's.
const (
	goldenV1       = "../../../../wire/testdata/vectors.json"
	goldenReliable = "../../../../wire/reliable/testdata/vectors.json"
)

// TestDescribeGoldenVectors describes every frame of the codec's golden
// vectors and checks the description against the vector.
func TestDescribeGoldenVectors(t *testing.T) {
	vs := wiretest.ReadVectors(t, goldenV1)
	if len(vs) < 90 {
		t.Fatalf("only %d vectors", len(vs))
	}
	kinds := map[string]string{"runt": "runt", "raw": "raw", "drop": "oetp", "request": "oetp", "response": "oetp"}
	for _, v := range vs {
		frame, err := hex.DecodeString(v.FrameHex)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		got := Describe(frame, Options{MaxFrame: v.MaxFrame, ExpectLength: v.ExpectLength})
		f := v.Fields
		want := Description{
			Valid: v.Problem == "ok" && (v.Kind == "request" || v.Kind == "response"),
			Kind:  kinds[v.Kind], Dst: f.Dst, Src: f.Src, Group: f.Group, EtherType: etherType(f.EtherType),
			FrameLen: len(frame), Cmd: v.Cmd, RequestID: f.RequestID, Address: f.Address, Length: f.Length,
			BitEnable: f.BitEnable, Data: f.Data, Payload: f.PayloadHex, EndOfDataOK: f.EndOfDataOK,
			ErrorCode: f.ErrorCode, Error: f.Error,
		}
		if v.Cause != nil && *v.Cause != 0 {
			want.Cause = v.Cause
		}
		want.Problem = got.Problem // checked below
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-vector +describe):\n%s", v.Name, diff)
		}
		if want.Valid != (got.Problem == "") {
			t.Errorf("%s: valid %v with problem %q", v.Name, got.Valid, got.Problem)
		}
	}
}

// etherType narrows a vector's EtherType to the description's width.
func etherType(e *int) *uint16 {
	if e == nil {
		return nil
	}
	v := uint16(*e)
	return &v
}
