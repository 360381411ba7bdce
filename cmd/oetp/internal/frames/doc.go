// Package frames turns oETP frames into what oetp decode and oetp dump
// print: a JSON description of one frame (Describe), a capture's frames one
// line each (Dumper, which pairs each DMA_READ_RSP with the length of its
// request within bounds), the hex users type (ParseHex), the lines of hex
// decode reads (DecodeLines), the frame oetp encode builds from its flags
// (Encode) and dump's live view of an interface (ShowLive).
package frames
