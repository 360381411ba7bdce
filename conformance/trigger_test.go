package conformance

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestShellExec: a trigger line runs in sh -c with the runner's
// environment and its placeholders replaced; its key=value words are the
// outcome, whatever its exit status; a command that outlives its context is
// an error.
func TestShellExec(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no sh")
	}
	t.Setenv("OETP_TRIGGER_TEST", "02:0e:0c:00:00:a0")
	line := expand(`echo "peer=3 mac=$OETP_TRIGGER_TEST done=0 error=1 error_code=9 rd_data=0xffffffff addr={addr}"; echo oops >&2; exit 1`,
		map[string]string{"addr": hex32(0x40)})
	out, st, err := ShellExec(context.Background(), line)
	if err != nil || st != 1 {
		t.Fatalf("ShellExec = %q, %d, %v", out, st, err)
	}
	o := parseOutcome(out)
	if o.done || !o.errFlag || o.code != 9 || !o.hasData || o.data != 0xffffffff {
		t.Errorf("outcome %+v of %q", o, out)
	}
	if want := "peer=3 mac=02:0e:0c:00:00:a0 done=0 error=1 error_code=9 rd_data=0xffffffff addr=0x40\noops\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := ShellExec(ctx, "sleep 5"); err == nil {
		t.Error("a command past its deadline is not an error")
	}
	if o := parseOutcome("ok=1"); o.code != -1 {
		t.Errorf("no error_code: %+v", o)
	}
}
