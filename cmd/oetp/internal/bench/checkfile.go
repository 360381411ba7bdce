package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// checkChunk is how much of an output file checkFile reads at a time.
const checkChunk = 1 << 20

// fileMismatch is checkFile's error for a file that does not hold what it
// should: Off is the first byte that differs, or -1 when the file's Size
// is not the length wanted.
type fileMismatch struct {
	Size      int64
	Off       int
	Got, Want byte
}

func (m *fileMismatch) Error() string {
	if m.Off < 0 {
		return fmt.Sprintf("the file holds %d bytes", m.Size)
	}
	return fmt.Sprintf("byte %d is %#x, want %#x", m.Off, m.Got, m.Want)
}

// checkFile checks that the file at path holds n bytes, the ones want
// writes into its buffer for each offset, reading the file a chunk at a
// time: checking a command's output allocates nothing of the block's
// size. The bench checks every block a dma read command writes; a
// block-sized buffer per check, freed before the next command, slows that
// command on a VM that hands freed memory back to its host
// (docs/benchmarks.md). The error is an I/O error or a *fileMismatch.
func checkFile(path string, n int, want func(off int, b []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != int64(n) {
		return &fileMismatch{Size: st.Size(), Off: -1}
	}
	c := min(n, checkChunk)
	got, exp := make([]byte, c), make([]byte, c)
	for off := 0; off < n; {
		k := min(c, n-off)
		if r, err := io.ReadFull(f, got[:k]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return &fileMismatch{Size: int64(off + r), Off: -1} // it shrank
			}
			return err
		}
		want(off, exp[:k])
		if !bytes.Equal(got[:k], exp[:k]) {
			j := 0
			for got[j] == exp[j] {
				j++
			}
			return &fileMismatch{Size: int64(n), Off: off + j, Got: got[j], Want: exp[j]}
		}
		off += k
	}
	return nil
}
