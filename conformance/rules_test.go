package conformance

import (
	"os"
	"strings"
	"testing"
)

// specHeadings are the section headings of testdata/oetp-v1-engine.txt, a
// copy of the specification, in order: a rule is looked for between its
// section's heading and the next one.
var specHeadings = []string{
	"Implementation status and scope", "Established encapsulation", "Lengths, MTU, and padding",
	"MAC addressing", "Engine responsibilities and internal transport", "Parameter encoding",
	"Request ID allocation and hard reset", "Sequence and Control stay local", "Command layouts",
	"Transactions and access policy", "Multicast write completion", "Peer access checks",
	"Streaming receive and partial transfers", "Error origin and CSR status",
	"Transfer sequencing and timeouts", "RMEM failure completion and notification",
	"Implemented control and datapath",
}

// TestRulesQuoteTheSpec: every case's Rule is verbatim text of the section
// its ID names, IDs are unique and follow oetp/<section>/<n>.
func TestRulesQuoteTheSpec(t *testing.T) {
	b, err := os.ReadFile("testdata/oetp-v1-engine.txt")
	if err != nil {
		t.Fatal(err)
	}
	spec := string(b)
	text := map[string]string{}
	for i, h := range specHeadings {
		start := strings.Index(spec, "\n"+h+"\n")
		if start < 0 {
			t.Fatalf("heading %q not in the specification", h)
		}
		end := len(spec)
		if i+1 < len(specHeadings) {
			end = strings.Index(spec, "\n"+specHeadings[i+1]+"\n")
		}
		text[h] = spec[start:end]
	}
	seen := map[string]bool{}
	for _, c := range Cases() {
		if seen[c.ID] {
			t.Errorf("duplicate ID %s", c.ID)
		}
		seen[c.ID] = true
		if !strings.HasPrefix(c.ID, "oetp/"+c.sec+"/") {
			t.Errorf("%s: section key %s", c.ID, c.sec)
		}
		sec, ok := text[c.Section]
		if !ok {
			t.Errorf("%s: section %q is not a heading of the specification", c.ID, c.Section)
			continue
		}
		if !strings.Contains(sec, c.Rule) {
			t.Errorf("%s: rule is not verbatim text of section %q:\n%s", c.ID, c.Section, c.Rule)
		}
	}
}
