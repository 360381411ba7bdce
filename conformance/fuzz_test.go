package conformance

import "testing"

// FuzzParseDUT: ParseDUT never panics, and a DUT it accepts is consistent:
// unicast peer MACs, no duplicates, windows inside the address space.
func FuzzParseDUT(f *testing.F) {
	f.Add(Template)
	f.Add("max_frame = 60\nslverr = [\"0:4\"]\n[[peer]]\nmac = \"02:00:00:00:00:01\"\nmode = \"none\"\n")
	f.Add("group = \"ff:ff:ff:ff:ff:ff\"\nunknown_mac = \"02:00:00:00:00:02\"")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseDUT(text)
		if err != nil {
			return
		}
		seen := map[[6]byte]bool{}
		for _, p := range d.Peers {
			if p.MAC.IsGroup() || p.MAC.IsZero() || seen[p.MAC] || p.Window.End() > 1<<32 || p.Mode > ModeDMARead {
				t.Fatalf("accepted peer %+v", p)
			}
			seen[p.MAC] = true
		}
		if !d.Group.IsZero() && !d.Group.IsGroup() {
			t.Fatalf("accepted group %v", d.Group)
		}
	})
}
