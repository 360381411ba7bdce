// Package conformance checks that a device follows the oETP v1 engine
// specification, from the outside: it drives the device through a
// link.Link like its peers would (an AF_PACKET socket on the device's
// network in real use, link/mem in tests), sending raw frames from the
// MACs of the peers the DUT file lists, and checks every reply, octet for
// octet, against the sentence of the specification that the case quotes.
//
// It is modelled on h2spec (one case per rule, IDs such as "oetp/cmd/3"
// that name the specification section, subtrees selected by prefix, JUnit
// output) and on the QUIC interop runner (a case the DUT file cannot
// support is skipped, naming the key it lacks, never failed).
//
// A case that expects no reply ends as soon as the device has answered a
// barrier request sent after the case's frames (an RMEM read from an rmem
// peer), so the suite runs in milliseconds against a device that answers
// in order; against one that does not, every such case waits
// Options.Timeout.
//
// The runner treats every address of a peer's window outside the DUT
// file's slverr and decerr ranges as scratch memory: it writes there and
// reads back. Cases that send frames shorter than 60 bytes need a link
// that does not pad them (veth, TAP); through a physical NIC set
// Options.LinkPads and they are skipped.
package conformance
