//go:build linux

package netns

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestAvailableReasons drops capabilities on a throwaway thread and checks
// the reasons Available gives (and so the skip messages of NewT).
func TestAvailableReasons(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		drop []uint
		want string
	}{
		{nil, ""},
		{[]uint{unix.CAP_NET_ADMIN}, "building network namespaces needs CAP_NET_ADMIN: run as root"},
		{[]uint{unix.CAP_SYS_ADMIN}, "building network namespaces needs CAP_SYS_ADMIN: run as root"},
		{[]uint{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}, "building network namespaces needs CAP_SYS_ADMIN and CAP_NET_ADMIN: run as root"},
	} {
		var got error
		err := onNewThread(func() error {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			if err := unix.Capget(&hdr, &data[0]); err != nil {
				return err
			}
			for _, c := range tc.drop {
				data[c/32].Effective &^= 1 << (c % 32)
			}
			if err := unix.Capset(&hdr, &data[0]); err != nil {
				return err
			}
			got = checkAvailable()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if (got == nil && tc.want != "") || (got != nil && got.Error() != tc.want) {
			t.Errorf("dropping %v: Available() = %v, want %q", tc.drop, got, tc.want)
		}
	}
}
