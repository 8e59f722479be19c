// Package natstest starts real NATS servers with JetStream for tests, on
// 127.0.0.1 only, with their files in the test's temp folder.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
)

// Start runs one embedded server with JetStream on a free loopback port;
// it is shut down when the test ends.
func Start(t testing.TB) *server.Server {
	t.Helper()
	s, err := node.StartEmbedded(node.EmbeddedOptions{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Connect dials s over TCP loopback and returns the connection and a
// JetStream handle; closed when the test ends.
func Connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := events.NewJetStream(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// ClusterNode is one server of a test cluster, restartable.
type ClusterNode struct {
	Opts   node.EmbeddedOptions
	Server *server.Server
}

// Cluster runs n servers clustered on reserved loopback ports, each listing
// every route, and waits for a JetStream meta leader with all peers.
func Cluster(t testing.TB, n int) []*ClusterNode {
	t.Helper()
	ports := freePorts(t, n)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	nodes := make([]*ClusterNode, n)
	for i := range n {
		nodes[i] = &ClusterNode{Opts: node.EmbeddedOptions{
			StoreDir: t.TempDir(), Port: -1, ServerName: fmt.Sprintf("S-%d", i+1),
			ClusterName: "lore-test", ClusterHost: "127.0.0.1", ClusterPort: ports[i], Routes: routes,
		}}
	}
	for _, cn := range nodes {
		cn.Start(t)
	}
	t.Cleanup(func() {
		for _, cn := range nodes {
			cn.Stop()
		}
	})
	WaitFor(t, 20*time.Second, func() error {
		for _, cn := range nodes {
			if cn.Server != nil && cn.Server.JetStreamIsLeader() && len(cn.Server.JetStreamClusterPeers()) == n {
				return nil
			}
		}
		return fmt.Errorf("no meta leader with %d peers yet", n)
	})
	return nodes
}

// Start (re)starts the node's server with its options and store.
func (c *ClusterNode) Start(t testing.TB) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		c.Server, err = node.StartEmbedded(c.Opts)
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("start %s: %v", c.Opts.ServerName, err)
}

// Stop shuts the node's server down (its store is kept).
func (c *ClusterNode) Stop() {
	if c.Server != nil {
		c.Server.Shutdown()
		c.Server.WaitForShutdown()
		c.Server = nil
	}
}

// URLs returns the client URLs of the running nodes, comma-separated.
func URLs(nodes []*ClusterNode) string {
	s := ""
	for _, n := range nodes {
		if n.Server == nil {
			continue
		}
		if s != "" {
			s += ","
		}
		s += n.Server.ClientURL()
	}
	return s
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("reserve port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// WaitFor polls check until it returns nil or the time is up.
func WaitFor(t testing.TB, total time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("condition not met within %s: %v", total, err)
}
