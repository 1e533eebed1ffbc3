// Command coredns is the test cluster's cluster DNS: CoreDNS with only the plugins the
// project's Corefile uses (scripts/cluster/dns.ts), built by scripts/kube/build-coredns.sh.
//
// CoreDNS documents this way of building it without its full plugin set: set
// dnsserver.Directives (the plugins' order in a server block, which plugin.cfg would
// otherwise generate) and import just those plugins, each of which registers itself in
// its init. Upstream's full binary compiles some 60 plugins and their cloud SDKs; this one
// compiles the kubernetes plugin (client-go) and three small ones.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins, in the order of Directives below.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

// directives keeps upstream plugin.cfg's relative order of these plugins: bind (where to
// listen) first, errors around the rest, the cache in front of kubernetes. No forward
// plugin: names outside the served zones get REFUSED, so no query leaves this machine.
var directives = []string{
	"bind",
	"errors",
	"cache",
	"kubernetes",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
