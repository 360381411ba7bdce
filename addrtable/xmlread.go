package addrtable

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"iter"
)

// xmlReader reads the tokens of an XML address table with the line each
// starts on; its errors are *Error values at that line.
type xmlReader struct {
	d    *xml.Decoder
	file string
	line int // where the last token read starts
	// raw reads with RawToken: no namespace translation (uHAL attributes
	// have none), which is most of Token's cost; the caller matches start
	// and end tags.
	raw bool
	err error // the error that ended tokens
}

func newXMLReader(file string, data []byte, raw bool) *xmlReader {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	d.CharsetReader = charsetReader
	return &xmlReader{d: d, file: file, raw: raw}
}

// tokens yields the tokens up to the end of the file or the first error,
// which err then holds.
func (r *xmlReader) tokens() iter.Seq[xml.Token] {
	return func(yield func(xml.Token) bool) {
		for {
			r.line, _ = r.d.InputPos()
			var tok xml.Token
			var err error
			if r.raw {
				tok, err = r.d.RawToken()
			} else {
				tok, err = r.d.Token()
			}
			if err != nil {
				if err != io.EOF {
					r.err = xmlError(r.file, r.line, err)
				}
				return
			}
			if !yield(tok) {
				return
			}
		}
	}
}

// errf returns an *Error at the line of the last token.
func (r *xmlReader) errf(format string, a ...any) error {
	return &Error{File: r.file, Line: r.line, Msg: fmt.Sprintf(format, a...)}
}

// nest refuses an element opened depth elements deep (1: the top one)
// past maxDepth.
func (r *xmlReader) nest(depth int) error {
	if depth > maxDepth {
		return r.errf("elements nested more than %d deep", maxDepth)
	}
	return nil
}
