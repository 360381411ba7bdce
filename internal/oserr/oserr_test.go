package oserr_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/openenoc/oetp/internal/oserr"
)

// The reason of a failed open is the bare OS error; an error that names no
// path is returned as it is.
func ExampleReason() {
	_, err := os.Open("/nonexistent/oserr")
	fmt.Println(err)
	fmt.Println(oserr.Reason(err), errors.Is(oserr.Reason(err), os.ErrNotExist))
	fmt.Println(oserr.Reason(errors.New("a plain error")))
	// Output:
	// open /nonexistent/oserr: no such file or directory
	// no such file or directory true
	// a plain error
}
