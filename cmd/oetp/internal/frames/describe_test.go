package frames

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The codec's golden vectors: v1's and the reliable transport's.
const (
	goldenV1       = "../../../../wire/testdata/vectors.json"
	goldenReliable = "../../../../wire/reliable/testdata/vectors.json"
)

// readVectors reads the golden vectors at path into the fields of T.
func readVectors[T any](t testing.TB, path string) []T {
	t.Helper()
	var vs []T
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &vs)
	}
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// golden is the part of wire/testdata/vectors.json these tests use.
type golden struct {
	Name         string  `json:"name"`
	FrameHex     string  `json:"frame_hex"`
	MaxFrame     int     `json:"max_frame"`
	ExpectLength *uint32 `json:"expect_length"`
	Kind         string  `json:"kind"`
	Cmd          string  `json:"cmd"`
	Problem      string  `json:"problem"`
	Cause        *uint32 `json:"cause"`
	Fields       struct {
		Dst         string  `json:"dst"`
		Src         string  `json:"src"`
		Group       *bool   `json:"group"`
		EtherType   *uint16 `json:"ethertype"`
		RequestID   *uint32 `json:"request_id"`
		Address     *uint32 `json:"address"`
		Length      *uint32 `json:"length"`
		BitEnable   *uint32 `json:"bit_enable"`
		Data        *uint32 `json:"data"`
		ErrorCode   *uint32 `json:"error_code"`
		Error       string  `json:"error"`
		PayloadHex  *string `json:"payload_hex"`
		EndOfDataOK *bool   `json:"end_of_data_ok"`
	} `json:"fields"`
}

// TestDescribeGoldenVectors describes every frame of the codec's golden
// vectors and checks the description against the vector.
func TestDescribeGoldenVectors(t *testing.T) {
	vs := readVectors[golden](t, goldenV1)
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
			Kind:  kinds[v.Kind], Dst: f.Dst, Src: f.Src, Group: f.Group, EtherType: f.EtherType,
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
