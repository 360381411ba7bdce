package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// WriteJSON writes the report as one JSON object:
// {"cases":[{"id","section","role","rule","verdict","variant","reason","detail"}],
// "passed","variants","failed","skipped","silent"}; variant only for the
// verdict "variant", reason only for "skip", silent only when the device
// went silent.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes one line per case (verdict, ID, the variant seen,
// detail) and, under a failed case, the rule it checks and the frames it
// sent (>) and received (<) in hex; then the note on a device that went
// silent, and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Cases {
		detail := c.Detail
		if c.Verdict == Variant {
			detail = "variant: " + c.Variant + "; " + detail
		}
		fmt.Fprintf(&b, "%-7s %-18s %s\n", strings.ToUpper(string(c.Verdict)), c.ID, detail)
		if c.Verdict == Fail {
			fmt.Fprintf(&b, "        rule (%s): %s\n", c.Section, c.Rule)
			writeFrames(&b, c.Frames)
		}
	}
	if r.Silent != "" {
		fmt.Fprintf(&b, "NOTE: %s\n", r.Silent)
	}
	fmt.Fprintf(&b, "%s\n", r.Summary())
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFailures writes, for each failed case, its ID and the frames it
// exchanged in hex (what WriteText shows under a failure).
func (r *Report) WriteFailures(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Cases {
		if c.Verdict == Fail {
			fmt.Fprintf(&b, "FAIL %s: %s\n", c.ID, c.Detail)
			writeFrames(&b, c.Frames)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Summary is the report's last line: the counts of each verdict.
func (r *Report) Summary() string {
	return fmt.Sprintf("%d passed, %d passed with a variant, %d failed, %d skipped", r.Passed, r.Variants, r.Failed, r.Skipped)
}

func writeFrames(b *strings.Builder, frames []Exchanged) {
	for _, f := range frames {
		dir := "<"
		if f.Sent {
			dir = ">"
		}
		fmt.Fprintf(b, "        %s %s\n", dir, Hex(f.Frame))
	}
}

type junitSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Skipped  int        `xml:"skipped,attr"`
	Suites   []junitSet `xml:"testsuite"`
}

type junitSet struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: one testsuite per
// specification section, one testcase per case (name: the ID, classname:
// the section), a failure carrying the detail, the rule and the frames in
// hex, a skip carrying the missing DUT key.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Tests: len(r.Cases), Failures: r.Failed, Skipped: r.Skipped}
	index := map[string]int{}
	for _, c := range r.Cases {
		i, ok := index[c.Section]
		if !ok {
			i = len(out.Suites)
			index[c.Section] = i
			out.Suites = append(out.Suites, junitSet{Name: c.Section})
		}
		s := &out.Suites[i]
		jc := junitCase{Name: c.ID, ClassName: c.Section, SystemOut: c.Rule}
		s.Tests++
		if c.Verdict == Variant {
			jc.SystemOut = "variant: " + c.Variant + "\n" + c.Rule
		}
		switch c.Verdict {
		case Fail:
			s.Failures++
			var b strings.Builder
			fmt.Fprintf(&b, "%s\nrule: %s\n", c.Detail, c.Rule)
			writeFrames(&b, c.Frames)
			jc.Failure = &junitMessage{Message: c.Detail, Body: b.String()}
		case Skip:
			s.Skipped++
			jc.Skipped = &junitMessage{Message: c.Detail}
		}
		s.Cases = append(s.Cases, jc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
