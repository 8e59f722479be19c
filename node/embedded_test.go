package node_test

import (
	"net"
	"strings"
	"testing"

	"github.com/loredev/lore/node"
)

// A port already taken fails the start with the listener's own reason (not
// a start-up timeout).
func TestEmbeddedServerReportsAPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	s, err := node.StartEmbedded(node.EmbeddedOptions{StoreDir: t.TempDir(), Host: "127.0.0.1", Port: port})
	if err == nil {
		s.Shutdown()
		t.Fatalf("started on port %d, which is in use", port)
	}
	if !strings.Contains(err.Error(), "address already in use") || strings.Contains(err.Error(), "did not start within") {
		t.Fatalf("error %q does not give the listener's reason", err)
	}
}
