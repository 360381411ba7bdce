// Package wiretest holds the schema of the codec's golden vectors
// (wire/testdata/vectors.json) for the tests that write them and the tests
// that read them. It is imported by test files only.
package wiretest

import (
	"encoding/json"
	"os"
	"testing"
)

// Vector is one entry of wire/testdata/vectors.json; see the README there.
type Vector struct {
	Name         string  `json:"name"`
	Description  string  `json:"description"`
	FrameHex     string  `json:"frame_hex"`
	FrameLen     int     `json:"frame_len"`
	MaxFrame     int     `json:"max_frame"`
	ExpectLength *uint32 `json:"expect_length,omitempty"`
	Kind         string  `json:"kind"`
	Cmd          string  `json:"cmd,omitempty"`
	CmdCode      *int    `json:"cmd_code,omitempty"`
	Problem      string  `json:"problem"`
	Cause        *uint32 `json:"cause,omitempty"`
	Fields       Fields  `json:"fields"`
}

// Fields are the decoded fields of a frame. A field is present when the
// frame carries it completely; payload_hex and end_of_data_ok only when the
// frame length is right for its Length (problem "ok" or "end_of_data").
type Fields struct {
	Dst         string  `json:"dst,omitempty"`
	Src         string  `json:"src,omitempty"`
	Group       *bool   `json:"group,omitempty"`
	EtherType   *int    `json:"ethertype,omitempty"`
	RequestID   *uint32 `json:"request_id,omitempty"`
	Address     *uint32 `json:"address,omitempty"`
	Length      *uint32 `json:"length,omitempty"`
	BitEnable   *uint32 `json:"bit_enable,omitempty"`
	Data        *uint32 `json:"data,omitempty"`
	ErrorCode   *uint32 `json:"error_code,omitempty"`
	Error       string  `json:"error,omitempty"`
	PayloadHex  *string `json:"payload_hex,omitempty"`
	EndOfDataOK *bool   `json:"end_of_data_ok,omitempty"`
}

// ReadVectors reads the golden vectors at path. A file of another schema
// (the reliable transport's) reads into the fields the two share.
func ReadVectors(t testing.TB, path string) []Vector {
	t.Helper()
	var vs []Vector
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &vs)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return vs
}
