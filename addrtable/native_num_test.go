package addrtable

import "testing"

// TestNativeNumberSyntax: oetp's own table format takes the number syntax
// of every oetp flag and configuration value.
func TestNativeNumberSyntax(t *testing.T) {
	tab, err := Parse(Native, "t.toml", []byte(`
[[node]]
name = "buf"
address = "4K"
mode = "block"
size = "1KiB"
[[node]]
name = "reg"
address = "0x2000"
`))
	if err != nil {
		t.Fatal(err)
	}
	buf, err := tab.Node("buf")
	if err != nil || buf.Address != 4096 || buf.Size != 1024 {
		t.Errorf("buf = %+v, %v; want address 4096, size 1024", buf, err)
	}
	if reg, err := tab.Node("reg"); err != nil || reg.Address != 0x2000 {
		t.Errorf("reg = %+v, %v", reg, err)
	}
	if _, err := Parse(Native, "t.toml", []byte("[[node]]\nname = \"a\"\naddress = \"4KB\"\n")); err == nil {
		t.Error("address 4KB accepted")
	}
}
