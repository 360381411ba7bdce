// Package oserr gives the OS's reason of a file operation's error in the
// words a message needs: the message names the path itself.
package oserr

import (
	"errors"
	"io/fs"
)

// Reason is the OS's reason of err without Go's operation and path ("no
// such file or directory", not "open /x: no such file or directory"); an
// error that is not an *fs.PathError is returned as it is.
func Reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
