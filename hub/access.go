package hub

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Access is who may use a device (a [[device]]'s read and write lists).
// With neither list, everyone who can connect may read and write: on the
// Unix socket the socket's mode and group decide who can (the hub's user
// and group, socket_group), on TCP the token. With either list, root, the
// hub's own user, and the clients the lists name may use the device: read
// lets them read, write lets them read and write.
type Access struct {
	// Read and Write are the lists as configured: "alice" (a user),
	// "1000" (a uid), "@lab" (a group, or "@1000" a gid), "*" (everyone
	// who can connect), "token" (TCP clients, which present the token).
	Read, Write []string
	read, write rule
}

// rule is one compiled list.
type rule struct {
	all, token bool
	uids, gids map[uint32]bool
}

// Restricted reports whether the device has rules.
func (a *Access) Restricted() bool { return a.Read != nil || a.Write != nil }

// compile resolves the lists' names; key is "read" or "write" for errors.
func compileRule(key string, list []string) (rule, error) {
	r := rule{uids: map[uint32]bool{}, gids: map[uint32]bool{}}
	for _, e := range list {
		switch {
		case e == "*":
			r.all = true
		case e == "token":
			r.token = true
		case strings.HasPrefix(e, "@"):
			g := e[1:]
			id, err := hostID(g, true)
			if err != nil {
				return r, fmt.Errorf("%s: no group %q on this host (%v); give a group name, @GID, a user name, a UID, \"*\" or \"token\"", key, g, err)
			}
			r.gids[id] = true
		default:
			id, err := hostID(e, false)
			if err != nil {
				return r, fmt.Errorf("%s: no user %q on this host (%v); give a user name, a UID, @group, \"*\" or \"token\"", key, e, err)
			}
			r.uids[id] = true
		}
	}
	return r, nil
}

// compile resolves both lists.
func (a *Access) compile() (err error) {
	if a.read, err = compileRule("read", a.Read); err != nil {
		return err
	}
	a.write, err = compileRule("write", a.Write)
	return err
}

// SetSocketGroup gives the socket at path the group (a name or a GID)
// named by socket_group, so that its members may connect.
func SetSocketGroup(path, group string) error {
	gid, err := hostID(group, true)
	if err != nil {
		return fmt.Errorf("socket_group: no group %q on this host (%v)", group, err)
	}
	if err := os.Chown(path, -1, int(gid)); err != nil {
		return fmt.Errorf("socket_group %s: %w", group, err)
	}
	return nil
}

// hostID is the ID s names: a number, or a user name (with group, a group
// name) that the host knows.
func hostID(s string, group bool) (uint32, error) {
	if id, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(id), nil
	}
	var id string
	if group {
		g, err := user.LookupGroup(s)
		if err != nil {
			return 0, err
		}
		id = g.Gid
	} else {
		u, err := user.Lookup(s)
		if err != nil {
			return 0, err
		}
		id = u.Uid
	}
	n, err := strconv.ParseUint(id, 10, 32)
	return uint32(n), err
}

// peer is who a client is: the kernel's credentials of a Unix socket's
// peer, or a TCP client that presented the token (tcp).
type peer struct {
	tcp    bool
	known  bool // uid, gid and groups are the kernel's
	pid    int32
	uid    uint32
	gid    uint32
	groups []uint32
}

func (r *rule) match(p *peer) bool {
	if r.all {
		return true
	}
	if p.tcp {
		return r.token
	}
	if !p.known {
		return false
	}
	if r.uids[p.uid] || r.gids[p.gid] {
		return true
	}
	for _, g := range p.groups {
		if r.gids[g] {
			return true
		}
	}
	return false
}

// allowed returns "" if p may read (write false) or write the device,
// else why not, naming the rule.
func (a *Access) allowed(dev string, p *peer, write bool) string {
	if !a.Restricted() {
		return ""
	}
	if p.known && !p.tcp && (p.uid == 0 || int(p.uid) == os.Geteuid()) {
		return ""
	}
	if a.write.match(p) || (!write && a.read.match(p)) {
		return ""
	}
	what, list := "read", fmt.Sprintf("read = %s and write = %s", quoteList(a.Read), quoteList(a.Write))
	if write {
		what, list = "write", fmt.Sprintf("write = %s", quoteList(a.Write))
	}
	return fmt.Sprintf("%s on device %q refused: %s is not in its %s; nothing was run (ask the hub's administrator to add you to the device's rules in the hub's config)",
		what, dev, p, list)
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// String names the client for a message.
func (p *peer) String() string {
	if p.tcp {
		return "a TCP client (token)"
	}
	if !p.known {
		return "a client whose credentials are unknown"
	}
	s := "uid " + strconv.FormatUint(uint64(p.uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(p.uid), 10)); err == nil {
		s += " (" + u.Username + ")"
	}
	return s + fmt.Sprintf(", pid %d", p.pid)
}
