package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/openenoc/oetp/cmd/oetp/internal/serve"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memspec"
)

// This file merges the flags of `oetp serve` over its configuration file
// (package serve holds the settings, their parsers and the file).

// wholeSpace is the size of the whole 32-bit address space.
const wholeSpace = serve.WholeSpace

// serveFlags are the raw values of the serve flags.
type serveFlags struct {
	config      string
	iface       string
	mac         macFlag
	group       macFlag
	regions     []string
	faults      []string
	peers       []string
	contexts    intFlag
	maxFrame    intFlag
	rawPolicy   string
	rmemTimeout time.Duration
	dmaTimeout  time.Duration
	pcap        string
	pcapFormat  formatFlag
	busyPoll    time.Duration
	placement   placementFlag
	jsonEvents  bool
	maxReadRate intFlag
}

// settings merges the configuration file (if any) with the flags: a flag
// given on the command line overrides the file, and a list flag given at
// least once replaces the file's list.
func (sf *serveFlags) settings(fs *pflag.FlagSet) (*serve.Settings, error) {
	s := &serve.Settings{}
	var file *serve.File
	where := func(key string) string { return fmt.Sprintf("--config %s: %s", sf.config, key) }
	if sf.config != "" {
		var err error
		if file, err = serve.LoadFile(sf.config); err != nil {
			return nil, err
		}
		if err := file.Apply(s, where); err != nil {
			return nil, err
		}
	}
	changed := fs.Changed
	if changed("iface") {
		s.Iface = sf.iface
	}
	if changed("mac") {
		s.MAC = sf.mac.m
	}
	if changed("group") {
		s.Group = sf.group.m
	}
	if changed("region") {
		s.Regions = nil
		for _, a := range sf.regions {
			r, err := memspec.ParseRegion(a)
			if err != nil {
				return nil, usagef("%v", err)
			}
			s.Regions = append(s.Regions, r)
		}
	}
	if changed("fault") {
		s.Faults = nil
		for _, a := range sf.faults {
			f, err := memspec.ParseFault(a)
			if err != nil {
				return nil, usagef("%v", err)
			}
			s.Faults = append(s.Faults, f)
		}
	}
	if changed("peer") {
		s.Peers, s.PeerTransport = nil, nil
		for _, a := range sf.peers {
			rest, tm, err := serve.SplitTransport(a)
			if err != nil {
				return nil, usagef("--peer %v", err)
			}
			p, err := serve.ParsePeer(rest)
			if err != nil {
				return nil, usagef("--peer %v", err)
			}
			s.Peers = append(s.Peers, p)
			s.PeerTransport = append(s.PeerTransport, tm)
		}
		s.PeerTransport = serve.OnlyIfUsed(s.PeerTransport)
	}
	if changed("contexts") {
		if sf.contexts.v == 0 {
			return nil, usagef("--contexts 0 is out of range: use 1..%d (leave it out for 1)", endpoint.MaxContexts)
		}
		s.Contexts = sf.contexts.v
	}
	if changed("max-frame") {
		if sf.maxFrame.v == 0 {
			return nil, usagef("--max-frame 0 is out of range: use 36..8192, or leave the flag out for min(8192, MTU+14)")
		}
		s.MaxFrame = sf.maxFrame.v
	}
	if changed("raw-policy") {
		p, err := serve.ParseRawPolicy(sf.rawPolicy)
		if err != nil {
			return nil, usagef("--raw-policy: %v", err)
		}
		s.RawPolicy = p
	}
	if changed("rmem-timeout") {
		s.RMEMTimeout = sf.rmemTimeout
	}
	if changed("dma-timeout") {
		s.DMATimeout = sf.dmaTimeout
	}
	if changed("pcap") {
		s.Pcap = sf.pcap
	}
	if changed("pcap-format") {
		s.PcapFormat = sf.pcapFormat.f
	}
	if changed("busy-poll") {
		s.BusyPoll = sf.busyPoll
	}
	if changed("placement") {
		s.Placement = sf.placement.p
	}
	if changed("json-events") {
		s.JSONEvents = sf.jsonEvents
	}
	if changed("max-read-rate") {
		s.MaxReadRate = int64(sf.maxReadRate.v)
	}
	return s, s.Check()
}
