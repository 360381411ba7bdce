//go:build unix

package devices

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a devices file another user could have written: it
// names the MACs commands send from and the tables they trust, so it must
// belong to this user or root and not be world-writable.
func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := uint32(os.Getuid()); st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("belongs to uid %d, not to you (uid %d) or root: another user could change the devices you reach; use a file of your own", st.Uid, uid)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("is writable by every user (mode %v): another user could change the devices you reach; chmod o-w it", fi.Mode().Perm())
	}
	return nil
}
