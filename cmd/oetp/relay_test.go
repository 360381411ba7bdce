package main

import "testing"

// TestRelayUsage: every mistake in relay's arguments is bad usage (exit 2)
// with the message that names it, and nothing on standard output.
func TestRelayUsage(t *testing.T) {
	const help = "Run 'oetp relay --help' for usage.\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"relay", "lo"}, "oetp: oetp relay needs two interfaces, IF1 and IF2; got 1 argument(s)\n"},
		{[]string{"relay", "lo", "lo"}, "oetp: IF1 and IF2 are both lo: name two different interfaces\n"},
		{[]string{"relay", "nosuchif0", "lo"}, "oetp: interface nosuchif0: no such network interface: list the interfaces with `ip link`\n"},
		{[]string{"relay", "nosuchif0", "lo", "--delay", "-1s"}, "oetp: --delay, --jitter, --reorder-hold and --stats must not be negative\n"},
		{[]string{"relay", "nosuchif0", "lo", "--loss", "2"}, "oetp: invalid argument \"2\" for \"--loss\" flag: \"2\" is out of range: a probability is 0% through 100% (0 through 1; write 5% for five percent)\n"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || errOut != c.want+help {
			t.Errorf("oetp %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want+help)
		}
	}
}
