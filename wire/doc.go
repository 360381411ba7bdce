// Package wire is the oETP v1 codec: frame layouts, lengths, padding,
// EndOfData, error-code mapping and receive classification, exactly as the
// openENOC oETP v1 engine specification defines them.
//
// The package is pure: no I/O, no goroutines, no allocation on any encode or
// decode path. Encoders append to a caller's buffer; the decoder returns a
// Frame, a view over the received bytes, and a Class that says what the
// frame is and what, if anything, is wrong with it.
//
// Offsets are measured from the first destination MAC octet of an untagged
// frame. Every four-byte parameter is little-endian; MAC octets and the
// EtherType (88 B5) keep network order.
//
// Its subpackage wire/reliable is the codec of the reliable transport's
// header (PSN, ACK/NAK, credits, CRC32C) that travels beneath v1 frames.
package wire
