package node

import (
	"errors"
	"fmt"

	"github.com/openenoc/oetp/link/relay"
)

// A Relay forwards every frame between two interfaces and impairs each
// direction on its own (package link/relay): `oetp relay`.
type (
	Relay       = relay.Relay
	RelayConfig = relay.Config
	RelayStats  = relay.Stats
)

// DefaultReorderHold is how long a relay holds a frame back for reordering
// when no frame follows it (RelayConfig.ReorderHold zero).
const DefaultReorderHold = relay.DefaultReorderHold

// OpenRelay opens a link on each of the interfaces a and b, for every frame
// the interface carries (every EtherType, up to its MTU), and relays
// between them with the impairments of cfg until the relay is closed,
// which closes the links. A link's errors that the user fixes are
// *ConfigError naming the interface (Field "iface"); an impairment out of
// range is an error of its own.
func OpenRelay(a, b string, cfg RelayConfig) (*Relay, error) {
	var links [2]*Link
	for i, name := range [2]string{a, b} {
		// Two links in one process wait in the network poller.
		l, err := OpenLink(LinkConfig{Iface: name, AnyFrame: true, AllEtherTypes: true, Shared: true})
		if err != nil {
			if i == 1 {
				links[0].Close()
			}
			if ce := (*ConfigError)(nil); !errors.As(err, &ce) {
				err = fmt.Errorf("interface %s: %w", name, err)
			}
			return nil, err
		}
		links[i] = l
	}
	r, err := relay.New(links[0].Link, links[1].Link, cfg)
	if err != nil {
		links[0].Close()
		links[1].Close()
		return nil, err
	}
	return r, nil
}
