package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/wire"
)

func mac(s string) wire.MAC {
	m, err := wire.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// TestTemplate: the template parses into the device it describes.
func TestTemplate(t *testing.T) {
	d, err := ParseDUT(Template)
	if err != nil {
		t.Fatal(err)
	}
	want := &DUT{
		MaxFrame:   8192,
		Group:      mac("03:0e:0c:00:00:01"),
		UnknownMAC: mac("02:0e:0c:00:00:77"),
		SlvErr:     []Range{{0x200000, 4096}},
		DecErr:     []Range{{0x201000, 4096}},
		Peers: []Peer{
			{MAC: mac("02:0e:0c:00:00:a0"), Mode: ModeRMEM, Window: Range{0, 0x202000}},
			{MAC: mac("02:0e:0c:00:00:a1"), Mode: ModeDMAWrite, Window: Range{0x100000, 0x102000}},
			{MAC: mac("02:0e:0c:00:00:a2"), Mode: ModeDMARead, Window: Range{0x100000, 0x102000}},
			{MAC: mac("02:0e:0c:00:00:a3"), Mode: ModeNone, Window: Range{0, 0x10000}},
		},
		Trigger: Triggers{MAC: mac("02:0e:0c:00:00:a0"), Timeout: time.Second, Wait: time.Minute},
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("template (-want +got):\n%s", diff)
	}
	// The serve command in the template's comment is TemplateServeArgs.
	cmd := strings.Join(strings.Fields(strings.NewReplacer("#", "", "\\", "").Replace(Template[strings.Index(Template, "oetp serve"):strings.Index(Template, "# and checked")])), " ")
	if want := "oetp serve --iface IF " + strings.Join(TemplateServeArgs, " "); cmd != want {
		t.Errorf("template comment shows\n%s\nwant\n%s", cmd, want)
	}
}

// TestParseDUTErrors: each mistake is named with its fix.
func TestParseDUTErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`max_frame = 20`, "max_frame 20: use the device's MAX_RAW_FRAME_SIZE, 36..8192"},
		{`group = "02:00:00:00:00:01"`, `group "02:00:00:00:00:01" is not a group MAC`},
		{`unknown_mac = "zz"`, `unknown_mac "zz" is not a unicast MAC`},
		{`slverr = "0x100"`, `slverr "0x100": write "BASE:SIZE"`},
		{`decerr = ["0:4K", 5]`, `is not a string`},
		{`colour = 1`, `unknown key "colour"`},
		{"[[peer]]\nmac = \"03:00:00:00:00:01\"\nmode = \"rmem\"", `[[peer]] #1: mac "03:00:00:00:00:01" is not a unicast MAC`},
		{"[[peer]]\nmac = \"02:00:00:00:00:01\"\nmode = \"rw\"", `[[peer]] #1: mode "rw": use none, rmem, dma-write or dma-read`},
		{"[[peer]]\nmac = \"02:00:00:00:00:01\"\nmode = \"rmem\"\nwindow = \"0:8G\"", `[[peer]] #1: window "0:8G"`},
		{"[trigger]\nmac = \"03:00:00:00:00:01\"", `[trigger] mac "03:00:00:00:00:01" is not a unicast MAC`},
		{"[trigger]\ntimeout = \"soon\"", `[trigger] timeout "soon": give a positive duration`},
		{"[trigger]\nrmem_red = \"x\"", `unknown key "trigger.rmem_red"`},
		{"unknown_mac = \"02:00:00:00:00:01\"\n[[peer]]\nmac = \"02:00:00:00:00:01\"\nmode = \"rmem\"", `unknown_mac 02:00:00:00:00:01 is a [[peer]]`},
	} {
		_, err := ParseDUT(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDUT(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	d, err := ParseDUT("slverr = [\"0:4K\", \"0x2000:16\"]\n[[peer]]\nmac = \"02:00:00:00:00:01\"\nmode = \"dma-read\"")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.SlvErr) != 2 || d.Peers[0].Window != (Range{0, 1 << 32}) || d.MaxFrame != 0 || !d.Group.IsZero() {
		t.Errorf("parsed %+v", d)
	}
}

// TestRTLSimDUT: the kit's DUT file parses: the kit's default table, and a
// trigger for every initiator case.
func TestRTLSimDUT(t *testing.T) {
	d, err := LoadDUT("testdata/rtlsim.toml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := ParseDUT(Template)
	if diff := cmp.Diff(tmpl.Peers, d.Peers); diff != "" {
		t.Errorf("peers (-template +rtlsim):\n%s", diff)
	}
	tr := d.Trigger
	for k, v := range map[string]string{"set_peer": tr.SetPeer, "rmem_read": tr.RMEMRead, "rmem_write": tr.RMEMWrite, "dma_write": tr.DMAWrite,
		"dma_read": tr.DMARead, "status": tr.Status, "setup": tr.Setup, "timeout_off": tr.TimeoutOff, "timeout_on": tr.TimeoutOn,
		"timeout_short": tr.TimeoutShort} {
		if !strings.Contains(v, "$OETP_RTLSIM/ctl.sh") {
			t.Errorf("%s %q does not use the kit's ctl.sh", k, v)
		}
	}
	if tr.MAC != mac("02:0e:0c:00:00:a0") || tr.Timeout != 2*time.Second || tr.Wait != time.Minute {
		t.Errorf("trigger %+v", tr)
	}
}
